// Package httpbody decodes HTTP bodies by their Content-Encoding.
//
// It imports nothing of bbengine's, like every codec package.
package httpbody
