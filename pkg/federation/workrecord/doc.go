// Package workrecord keeps, on a Work, the record of member objects the Work may have applied that its manifests
// no longer name, so that the execution stage can still remove them. The binding stage adds to it when it changes
// a Work's manifests (in the same write); the execution stage takes out what it removed. A Work whose manifests
// never changed carries no record, and costs no write for one.
package workrecord
