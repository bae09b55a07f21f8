// Package bytesize writes byte counts as people read them.
package bytesize

import "fmt"

// Format writes n bytes with a binary unit and one decimal: "512 B",
// "1.5 KiB", "12.0 MiB", "3.2 GiB".
func Format(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
