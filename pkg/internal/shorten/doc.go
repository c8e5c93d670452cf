// Package shorten bounds the text fedmesh puts where the API limits its length (condition messages, event
// notes): cut on a character boundary, marked with "...". One rule for every stage that writes such text.
package shorten
