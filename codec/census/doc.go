// Package census counts what a session holds, so that a conversion or an
// import can be checked for loss: the counts of the source (computed from
// its raw records by the source's own rules) side by side with the counts
// of the result (computed from what was written).
//
// It imports nothing of bbengine's, like every codec package.
package census
