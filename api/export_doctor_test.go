package api

// SetPeekHook sets the function Doctor runs between opening the derived
// state of a free directory and reading it (nil for none).
func SetPeekHook(f func()) { peekHook = f }
