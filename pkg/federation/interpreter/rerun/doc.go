// Package rerun tells the federation's stages when a users' interpreter layer (customizations, webhooks) swaps in a
// set that answers differently, so that each stage looks again at once at the objects whose answers may change,
// instead of at their next reconcile.
package rerun
