// Package index will own the Bluge BM25 index of artifacts and transcript
// segments. It holds no code yet: it arrives with the memory issue.
package index
