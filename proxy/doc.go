// Package proxy will own the recording reverse proxy that streams provider
// traffic through untouched and tees every chunk into the WAL. It holds no
// code yet: it arrives with the proxy issue.
package proxy
