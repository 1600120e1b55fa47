package textfmt

import "strings"

// Shell returns s as a POSIX shell reads it back as one word: as it is when it holds only
// letters, digits and -_./:=@%+, (a table name, a URL, a flag), else in single quotes with
// each ' written '\” (a name with a space, a backquote, a $ or a quote). The empty string is ”.
func Shell(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// ShellJoin returns a command line a POSIX shell splits back into args: each one through
// Shell, joined by spaces.
func ShellJoin(args ...string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = Shell(a)
	}
	return strings.Join(out, " ")
}
