package memtext

import (
	"strconv"
	"strings"
)

// Value is a quantity a sentence states: a number and its unit ("10%",
// "512 MB", "30 seconds", "60 Hz"), the unit normalised ("%", "mb", "s",
// "hz"). Values let a later setting replace an earlier one of the same
// kind of quantity when the two are worded differently: "sample the rest
// at 10%" and "go down to 5% for the non-error traces".
type Value struct {
	Num, Unit string
}

// valueUnits maps the unit words Values knows to their normal form.
var valueUnits = map[string]string{
	"%": "%", "percent": "%",
	"hz": "hz", "khz": "khz",
	"kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb", "kib": "kb", "mib": "mb", "gib": "gb",
	"ms": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
	"m": "min", "min": "min", "mins": "min", "minute": "min", "minutes": "min",
	"h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
	"d": "d", "day": "d", "days": "d", "rps": "rps", "qps": "qps",
	"epochs": "epochs", "epoch": "epochs", "replicas": "replicas", "workers": "workers", "threads": "threads",
}

// Values returns the quantities s states, in order: a number followed by
// a unit word or written against it ("10%", "512MB", "30s", "5 minutes").
// A number without a unit is no value: it cannot be compared.
func Values(s string) []Value {
	var out []Value
	low := lowerASCII(s)
	for i := 0; i < len(low); i++ {
		c := low[i]
		if c < '0' || c > '9' || i > 0 && (isIdentByte(low[i-1]) || low[i-1] == '.' || low[i-1] == ':') {
			continue
		}
		j := i
		for j < len(low) && (low[j] >= '0' && low[j] <= '9' || low[j] == '.' || low[j] == ',' && j+1 < len(low) && low[j+1] >= '0' && low[j+1] <= '9') {
			j++
		}
		num := strings.TrimRight(strings.ReplaceAll(low[i:j], ",", ""), ".")
		if j-i <= 2 && j+2 < len(low) && low[j] == ':' && isDigitByte(low[j+1]) && isDigitByte(low[j+2]) && (j+3 == len(low) || !isIdentByte(low[j+3]) && low[j+3] != ':') {
			// A time of day: "02:00 UTC", "23:00".
			out = append(out, Value{Num: strings.TrimLeft(low[i:j], "0") + low[j:j+3], Unit: "clock"})
			i = j + 3
			continue
		}
		k := j
		if k < len(low) && low[k] == ' ' {
			k++
		}
		e := k
		for e < len(low) && (low[e] >= 'a' && low[e] <= 'z' || low[e] == '%') {
			e++
			if low[e-1] == '%' {
				break
			}
		}
		if u, ok := valueUnits[low[k:e]]; ok && num != "" {
			out = append(out, Value{Num: num, Unit: u})
		} else if w := wordBefore(low, i); countedSettings[w] && num != "" {
			// "concurrency 10", "batch size 5000": the setting is the
			// unit.
			out = append(out, Value{Num: num, Unit: w})
		}
		i = e
	}
	return out
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-' || c >= '0' && c <= '9'
}

// RelativeChange reports whether s changes a setting relative to what it
// was ("go down to 5%", "bring memory down to 512 MB", "bump the tick to
// 60 Hz", "drop it to 5"): it replaces an earlier value even when it does
// not name the setting the same way.
func RelativeChange(s string) bool {
	low := lowerASCII(s)
	for _, m := range []string{" down to ", " up to "} {
		for i := strings.Index(low, m); i >= 0; {
			if j := i + len(m); j < len(low) && low[j] >= '0' && low[j] <= '9' {
				return true
			}
			k := strings.Index(low[i+1:], m)
			if k < 0 {
				break
			}
			i += 1 + k
		}
	}
	for _, m := range []string{"bump ", "lower ", "raise ", "halve ", "double ", "drop it to ", "drop them to ", "cut it to ", "reduce ", "increase ", "decrease "} {
		if strings.HasPrefix(low, strings.TrimLeft(m, " ")) || strings.Contains(low, m) {
			return true
		}
	}
	return false
}

// countedSettings name a setting whose value is a bare count: "with
// concurrency 10", "3 retries" is read by valueUnits.
var countedSettings = map[string]bool{
	"concurrency": true, "replicas": true, "workers": true, "threads": true, "retries": true, "attempts": true,
	"parallelism": true, "shards": true, "partitions": true, "size": true, "limit": true, "timeout": true, "ttl": true,
}

// wordBefore returns the word that ends right before low[i] (one space
// between), "" when there is none.
func wordBefore(low string, i int) string {
	if i < 2 || low[i-1] != ' ' {
		return ""
	}
	j := i - 1
	for j > 0 && low[j-1] >= 'a' && low[j-1] <= 'z' {
		j--
	}
	return low[j : i-1]
}

// settingAliases are the short names people use for a setting.
var settingAliases = map[string]string{
	"lr": "learning rate", "learning-rate": "learning rate", "bs": "batch size", "batch": "batch size",
	"mem": "memory", "ram": "memory", "epoch": "epochs", "warmup": "warmup steps", "wd": "weight decay",
	"grad accumulation": "gradient accumulation", "grad accum": "gradient accumulation",
}

func settingAlias(s string) string {
	if a, ok := settingAliases[s]; ok {
		return a
	}
	return s
}

// SettingName returns what one setting of a task request sets: its words
// without its value and unit ("learning rate 3e-5" is "learning rate",
// "1024 mb memory" is "memory", "batch size 16" is "batch size"), the
// job of a known option ("bf16" is "numeric precision"), short names
// spelled out ("lr" is "learning rate").
func SettingName(item string) string {
	if r, _ := optionRole(item); r != "" {
		return r
	}
	var ws []string
	unitWord := ""
	fs := strings.Fields(strings.ToLower(item))
	for i, w := range fs {
		if hasDigit(w) {
			continue
		}
		if _, unit := valueUnits[w]; unit && i > 0 && hasDigit(fs[i-1]) {
			unitWord = w // "3 epochs" sets the epochs
			continue
		}
		switch w {
		case "on", "off", "true", "false", "yes", "no", "=", ":":
			continue
		case "the", "a", "an", "to", "by", "from", "of", "our", "its", "at":
			// "drop the LR to 2e-5": the words of a change.
			continue
		}
		if i == 0 && changeVerbs[w] {
			continue
		}
		ws = append(ws, w)
	}
	if len(ws) == 0 && unitWord != "" && len(unitWord) > 2 {
		return settingAlias(unitWord)
	}
	if len(ws) == 0 {
		return strings.ToLower(strings.TrimSpace(item))
	}
	return settingAlias(strings.Join(ws, " "))
}

// unitScale puts the units of one dimension on one scale: time in
// milliseconds, sizes in kilobytes, frequencies in hertz.
var unitScale = map[string]struct {
	dim   string
	scale float64
}{
	"ms": {"time", 1}, "s": {"time", 1e3}, "min": {"time", 60e3}, "h": {"time", 3600e3}, "d": {"time", 86400e3},
	"kb": {"size", 1}, "mb": {"size", 1 << 10}, "gb": {"size", 1 << 20}, "tb": {"size", 1 << 30},
	"hz": {"freq", 1}, "khz": {"freq", 1e3},
}

// Comparable reports whether x and y measure one kind of quantity: the
// same unit, or units of one dimension ("30 seconds" and "5 minutes").
func Comparable(x, y Value) bool {
	if x.Unit == y.Unit {
		return true
	}
	a, ok1 := unitScale[x.Unit]
	b, ok2 := unitScale[y.Unit]
	return ok1 && ok2 && a.dim == b.dim
}

// SameQuantity reports whether x and y are one quantity, however
// written: "30s" and "30 seconds", "1 h" and "60 minutes".
func SameQuantity(x, y Value) bool {
	if x == y {
		return true
	}
	a, ok1 := unitScale[x.Unit]
	b, ok2 := unitScale[y.Unit]
	if !ok1 || !ok2 || a.dim != b.dim {
		return false
	}
	n, err1 := strconv.ParseFloat(x.Num, 64)
	m, err2 := strconv.ParseFloat(y.Num, 64)
	return err1 == nil && err2 == nil && n*a.scale == m*b.scale
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }
