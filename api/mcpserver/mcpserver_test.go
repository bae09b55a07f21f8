package mcpserver

import "testing"

func TestLoopbackOrigin(t *testing.T) {
	for origin, want := range map[string]bool{
		"http://localhost:3000": true, "http://127.0.0.1": true, "http://[::1]:8080": true,
		"https://evil.example": false, "http://127.0.0.1.evil.example": false, "null": false, "http://10.0.0.1": false,
	} {
		if got := loopbackOrigin(origin); got != want {
			t.Errorf("loopbackOrigin(%q) = %v, want %v", origin, got, want)
		}
	}
}
