// Package handoff holds what one federation stage hands another about an object until the other takes it up:
// one value per object, told from a namesake (deleted and made again) by its UID, and a subscriber (the
// receiving stage) told of each new value. pkg/federation/verdicts (conditions on their way to a status write)
// and pkg/federation/rendering (the binding stage's outcomes) keep theirs on a Board.
package handoff
