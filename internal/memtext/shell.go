package memtext

import (
	"path"
	"strings"
)

// shWord is one token of a shell command: a word (quotes removed) or an
// operator (&&, ||, |, ;, &, newline, parentheses, redirections).
type shWord struct {
	s  string
	op bool
}

// maxShellDepth bounds how deep bash -c "…" wrappers are unwrapped.
const maxShellDepth = 4

// shLex splits a shell command into words and operators. It removes
// quotes and backslashes, keeps $(…), `…` and ${…} as part of a word, drops
// comments, and skips here-document bodies.
func shLex(cmd string) []shWord {
	var out []shWord
	var b strings.Builder
	inWord := false
	var heredocs []string // delimiters waiting for the end of the line
	emit := func() {
		if inWord {
			out = append(out, shWord{s: b.String()})
			b.Reset()
			inWord = false
		}
	}
	op := func(s string) {
		emit()
		out = append(out, shWord{s: s, op: true})
	}
	for i := 0; i < len(cmd); {
		c := cmd[i]
		switch {
		case c == '\n':
			emit()
			out = append(out, shWord{s: ";", op: true})
			i++
			// Skip here-document bodies.
			for _, d := range heredocs {
				for i < len(cmd) {
					end := strings.IndexByte(cmd[i:], '\n')
					var l string
					if end < 0 {
						l, end = cmd[i:], len(cmd)
					} else {
						l, end = cmd[i:i+end], i+end+1
					}
					i = end
					if strings.TrimSpace(l) == d {
						break
					}
				}
			}
			heredocs = heredocs[:0]
		case c == ' ' || c == '\t' || c == '\r':
			emit()
			i++
		case c == '#' && !inWord:
			for i < len(cmd) && cmd[i] != '\n' {
				i++
			}
		case c == '\\':
			if i+1 < len(cmd) {
				if cmd[i+1] != '\n' {
					b.WriteByte(cmd[i+1])
					inWord = true
				}
				i += 2
			} else {
				i++
			}
		case c == '\'':
			inWord = true
			end := strings.IndexByte(cmd[i+1:], '\'')
			if end < 0 {
				b.WriteString(cmd[i+1:])
				i = len(cmd)
			} else {
				b.WriteString(cmd[i+1 : i+1+end])
				i += end + 2
			}
		case c == '"':
			inWord = true
			i++
			for i < len(cmd) && cmd[i] != '"' {
				if cmd[i] == '\\' && i+1 < len(cmd) && strings.IndexByte("\"\\$`\n", cmd[i+1]) >= 0 {
					if cmd[i+1] != '\n' {
						b.WriteByte(cmd[i+1])
					}
					i += 2
					continue
				}
				b.WriteByte(cmd[i])
				i++
			}
			i++
		case c == '$' && i+1 < len(cmd) && (cmd[i+1] == '(' || cmd[i+1] == '{'):
			inWord = true
			end := balanced(cmd, i+1)
			b.WriteString(cmd[i:end])
			i = end
		case c == '`':
			inWord = true
			end := strings.IndexByte(cmd[i+1:], '`')
			if end < 0 {
				end = len(cmd)
			} else {
				end += i + 2
			}
			b.WriteString(cmd[i:end])
			i = end
		case c == '&' || c == '|' || c == ';' || c == '(' || c == ')':
			if c == '&' && i+1 < len(cmd) && cmd[i+1] == '>' {
				n := 2
				if i+2 < len(cmd) && cmd[i+2] == '>' {
					n = 3
				}
				op(cmd[i : i+n])
				i += n
				continue
			}
			if i+1 < len(cmd) && (cmd[i+1] == c || c == '|' && cmd[i+1] == '&') && c != '(' && c != ')' {
				op(cmd[i : i+2])
				i += 2
				continue
			}
			op(cmd[i : i+1])
			i++
		case c == '>' || c == '<':
			// An all-digit word right before is a file descriptor.
			fd := ""
			if inWord && isDigits(b.String()) {
				fd = b.String()
				b.Reset()
				inWord = false
			}
			emit()
			j := i + 1
			for j < len(cmd) && j < i+3 && (cmd[j] == '>' || cmd[j] == '<' || cmd[j] == '|' || cmd[j] == '&' || cmd[j] == '-') {
				if cmd[j] == '-' && !strings.HasPrefix(cmd[i:], "<<") {
					break
				}
				j++
			}
			o := cmd[i:j]
			out = append(out, shWord{s: fd + o, op: true})
			i = j
			if o == "<<" || o == "<<-" {
				// The next word is the delimiter.
				for i < len(cmd) && (cmd[i] == ' ' || cmd[i] == '\t') {
					i++
				}
				k := i
				for k < len(cmd) && !isSpace(cmd[k]) && strings.IndexByte(";&|<>()", cmd[k]) < 0 {
					k++
				}
				d := strings.Trim(cmd[i:k], "'\"\\")
				heredocs = append(heredocs, d)
				i = k
			}
		default:
			inWord = true
			b.WriteByte(c)
			i++
		}
	}
	emit()
	return out
}

// balanced returns the index after the bracket group opening at cmd[i].
func balanced(cmd string, i int) int {
	open := cmd[i]
	closer := byte(')')
	if open == '{' {
		closer = '}'
	}
	depth := 0
	for j := i; j < len(cmd); j++ {
		switch cmd[j] {
		case open:
			depth++
		case closer:
			depth--
			if depth == 0 {
				return j + 1
			}
		case '\'':
			if k := strings.IndexByte(cmd[j+1:], '\''); k >= 0 {
				j += k + 1
			}
		}
	}
	return len(cmd)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// simpleCmd is one command of a pipeline or list: its words and the
// redirections that write files.
type simpleCmd struct {
	args   []string
	writes []string
}

// splitCommands splits lexed words into simple commands.
func splitCommands(ws []shWord) []simpleCmd {
	var out []simpleCmd
	var cur simpleCmd
	flush := func() {
		if len(cur.args) > 0 || len(cur.writes) > 0 {
			out = append(out, cur)
		}
		cur = simpleCmd{}
	}
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if !w.op {
			cur.args = append(cur.args, w.s)
			continue
		}
		o := strings.TrimLeft(w.s, "0123456789")
		switch o {
		case ">", ">>", ">|", "&>", "&>>":
			if i+1 < len(ws) && !ws[i+1].op {
				i++
				if t := ws[i].s; writableTarget(t) {
					cur.writes = append(cur.writes, t)
				}
			}
		case "<", "<<", "<<-", "<<<", ">&", "<&", "<>":
			if i+1 < len(ws) && !ws[i+1].op {
				i++
				if o == ">&" && writableTarget(ws[i].s) && !isDigits(ws[i].s) && ws[i].s != "-" {
					cur.writes = append(cur.writes, ws[i].s)
				}
			}
		default:
			flush()
		}
	}
	flush()
	return out
}

// writableTarget reports whether a redirection target is a file: not a
// device under /dev and not a descriptor duplication ("&1").
func writableTarget(t string) bool {
	return t != "" && !strings.HasPrefix(t, "&") && !strings.HasPrefix(t, "/dev/")
}

// unwrap strips what runs a command without being it: environment
// assignments (FOO=1), sudo, env, time, nohup, nice, timeout, command,
// exec, stdbuf, and their flags.
func unwrap(args []string) []string {
	for len(args) > 0 {
		a := args[0]
		if k := strings.IndexByte(a, '='); k > 0 && isName(a[:k]) {
			args = args[1:]
			continue
		}
		switch path.Base(a) {
		case "sudo", "doas":
			args = skipFlags(args[1:], "-u", "-g", "-C", "-h", "-p", "-U")
		case "env":
			args = skipFlags(args[1:], "-u", "-C", "-S")
		case "time", "nohup", "command", "exec", "builtin", "stdbuf":
			args = skipFlags(args[1:])
		case "nice", "ionice":
			args = skipFlags(args[1:], "-n", "-c")
		case "timeout":
			args = skipFlags(args[1:], "-s", "-k")
			if len(args) > 0 {
				args = args[1:]
			}
		default:
			return args
		}
	}
	return args
}

// skipFlags drops leading flags; the flags listed take an argument.
func skipFlags(args []string, withArg ...string) []string {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		f := args[0]
		args = args[1:]
		if f == "--" {
			break
		}
		for _, w := range withArg {
			if f == w && len(args) > 0 {
				args = args[1:]
				break
			}
		}
	}
	return args
}

func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

// shellScript returns the script of a `bash -c "…"` style wrapper, or "".
func shellScript(args []string) (string, bool) {
	if len(args) < 2 {
		return "", false
	}
	switch path.Base(args[0]) {
	case "bash", "sh", "zsh", "dash", "ksh":
	default:
		if args[0] == "eval" {
			return strings.Join(args[1:], " "), true
		}
		return "", false
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			if a == "--login" || a == "--norc" || a == "--noprofile" {
				continue
			}
			return "", false
		}
		if strings.Contains(a, "c") && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// eachCommand calls fn for every simple command in cmd, unwrapping
// sudo/env prefixes and bash -c wrappers.
func eachCommand(cmd string, depth int, fn func(args, writes []string)) {
	for _, c := range splitCommands(shLex(cmd)) {
		args := unwrap(c.args)
		if s, ok := shellScript(args); ok && depth < maxShellDepth {
			fn(nil, c.writes)
			eachCommand(s, depth+1, fn)
			continue
		}
		fn(args, c.writes)
	}
}

// operands returns the arguments that are not flags; the flags listed
// take an argument ("-t DIR"), whose value is returned in flagVals.
func operands(args []string, withArg ...string) (ops []string, flagVals map[string]string) {
	flagVals = map[string]string{}
	done := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if done || !strings.HasPrefix(a, "-") || a == "-" {
			ops = append(ops, a)
			continue
		}
		if a == "--" {
			done = true
			continue
		}
		if k := strings.IndexByte(a, '='); k > 0 && strings.HasPrefix(a, "--") {
			flagVals[a[:k]] = a[k+1:]
			continue
		}
		for _, w := range withArg {
			if a == w && i+1 < len(args) {
				flagVals[a] = args[i+1]
				i++
				break
			}
		}
	}
	return ops, flagVals
}

// ShellWrites returns the files a shell command writes, in order and
// unique: redirection targets (> and >>; not 2>&1, not /dev/null), tee
// files, sed -i and perl -i files, touch, the destination of cp, mv,
// install and ln, dd of=, truncate, and rm and git rm targets (a delete
// is a write). It reads && ; | chains, quotes, environment prefixes,
// sudo, here-documents, and bash -c / sh -c wrappers. mkdir is not a file
// write.
func ShellWrites(cmd string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	eachCommand(cmd, 0, func(args, writes []string) {
		for _, w := range writes {
			add(w)
		}
		for _, p := range commandWrites(args) {
			add(p)
		}
	})
	return out
}

// ShellDeletes returns the files a shell command deletes (rm, unlink, git
// rm targets), in order and unique.
func ShellDeletes(cmd string) []string {
	var out []string
	seen := map[string]bool{}
	eachCommand(cmd, 0, func(args, _ []string) {
		for _, p := range commandDeletes(args) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	})
	return out
}

func commandDeletes(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	switch path.Base(args[0]) {
	case "rm", "unlink":
		ops, _ := operands(args[1:])
		return ops
	case "git":
		rest := skipFlags(args[1:], "-C", "-c", "--git-dir", "--work-tree")
		if len(rest) > 0 && rest[0] == "rm" {
			ops, _ := operands(rest[1:])
			return ops
		}
	}
	return nil
}

func commandWrites(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	if d := commandDeletes(args); d != nil {
		return d
	}
	switch path.Base(args[0]) {
	case "tee", "touch":
		ops, _ := operands(args[1:], "-d", "-r", "-t")
		return ops
	case "sed", "gsed":
		inPlace := false
		script := false
		var files []string
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-i" || strings.HasPrefix(a, "-i") && !strings.HasPrefix(a, "--") || a == "--in-place" || strings.HasPrefix(a, "--in-place="):
				inPlace = true
			case a == "-e" || a == "-f" || a == "--expression" || a == "--file":
				script = true
				i++
			case strings.HasPrefix(a, "-") && len(a) > 1:
				if strings.Contains(a[1:], "i") && !strings.HasPrefix(a, "--") {
					inPlace = true
				}
			case !script:
				script = true
			default:
				files = append(files, a)
			}
		}
		if inPlace {
			return files
		}
	case "perl":
		inPlace := false
		var files []string
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-e" || a == "-E":
				i++
			case strings.HasPrefix(a, "-") && len(a) > 1:
				if strings.Contains(a, "i") {
					inPlace = true
				}
				if strings.HasSuffix(a, "e") {
					i++
				}
			default:
				files = append(files, a)
			}
		}
		if inPlace {
			return files
		}
	case "cp", "mv", "install", "ln", "rsync", "scp":
		name := path.Base(args[0])
		ops, fv := operands(args[1:], "-t", "-S", "-m", "-o", "-g", "--suffix", "-e")
		if name == "install" {
			for _, a := range args[1:] {
				if a == "-d" || a == "--directory" {
					return nil
				}
			}
		}
		if d, ok := fv["-t"]; ok {
			return []string{d}
		}
		if d, ok := fv["--target-directory"]; ok {
			return []string{d}
		}
		if len(ops) >= 2 {
			return ops[len(ops)-1:]
		}
	case "dd":
		for _, a := range args[1:] {
			if strings.HasPrefix(a, "of=") && writableTarget(a[3:]) {
				return []string{a[3:]}
			}
		}
	case "truncate":
		ops, _ := operands(args[1:], "-s", "-r")
		return ops
	case "git":
		rest := skipFlags(args[1:], "-C", "-c", "--git-dir", "--work-tree")
		if len(rest) > 2 && rest[0] == "mv" {
			ops, _ := operands(rest[1:])
			if len(ops) >= 2 {
				return ops[len(ops)-1:]
			}
		}
	}
	return nil
}
