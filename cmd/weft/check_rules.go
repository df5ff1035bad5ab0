package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/weftdb/weft/ruler"
)

// Exit codes of `weft check-rules`, as promtool's `check rules`.
const (
	exitRulesValid   = 0 // every file is valid
	exitRulesInvalid = 1 // a file is invalid or unreadable
	exitRulesUsage   = 2 // bad arguments
)

// runCheckRules is `weft check-rules [-logql] FILE...`: it validates rule
// files exactly as the server loads them (fields, names, templates,
// expressions; LogQL ones with -logql) without starting anything, prints
// one verdict per file on stdout and every problem (file, line, column,
// group, rule, reason) on stderr.
func runCheckRules(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("weft check-rules", flag.ContinueOnError)
	fs.SetOutput(stderr)
	logqlFiles := fs.Bool("logql", false, "the files are LogQL rule files (Loki ruler format)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weft check-rules [-logql] FILE...\n\nValidates rule files without starting the server. Exit status: 0 all valid, 1 a file is invalid, 2 usage.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitRulesValid
		}
		return exitRulesUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitRulesUsage
	}
	lang := ruler.PromQL
	if *logqlFiles {
		lang = ruler.LogQL
	}
	code := exitRulesValid
	for _, f := range fs.Args() {
		fmt.Fprintf(stdout, "Checking %s\n", f)
		n, errs := ruler.CheckFile(f, lang)
		if len(errs) > 0 {
			fmt.Fprintf(stdout, "  FAILED: %d problems\n", len(errs))
			for _, err := range errs {
				fmt.Fprintln(stderr, err)
			}
			code = exitRulesInvalid
			continue
		}
		fmt.Fprintf(stdout, "  SUCCESS: %d rules found\n", n)
	}
	return code
}
