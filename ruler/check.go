package ruler

import (
	"log/slog"
)

// CheckFile validates a rule file of the given language exactly as
// ApplyConfig would load it, without evaluating anything, and returns the
// number of rules in it. Each error names the file and, where the YAML
// parser or rulefmt knows it, the line and column, then the group, the rule
// and the reason. Safe for concurrent use.
func CheckFile(file string, lang Language) (rules int, errs []error) {
	rgs, errs := checkFile(file, lang, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return 0, errs
	}
	for _, g := range rgs.Groups {
		rules += len(g.Rules)
	}
	return rules, nil
}
