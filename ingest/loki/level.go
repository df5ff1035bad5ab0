package loki

import (
	"strings"
)

// Level names Loki writes into detected_level.
const (
	levelTrace    = "trace"
	levelDebug    = "debug"
	levelInfo     = "info"
	levelWarn     = "warn"
	levelError    = "error"
	levelCritical = "critical"
	levelFatal    = "fatal"
	levelUnknown  = "unknown"

	// DetectedLevel is the structured-metadata name written at ingest.
	DetectedLevel = "detected_level"
	// ServiceName is the label discovered at ingest.
	ServiceName = "service_name"
	// UnknownService is service_name when no label gives one.
	UnknownService = "unknown_service"
)

// levelKeys are the label, metadata and field names that carry a level
// (Loki's list, case variants included).
var levelKeys = []string{
	"level", "LEVEL", "Level", "severity", "SEVERITY", "Severity",
	"lvl", "LVL", "Lvl", "severity_text", "SEVERITY_TEXT", "Severity_Text",
}

func isLevelKey(k string) bool {
	for _, l := range levelKeys {
		if k == l {
			return true
		}
	}
	return false
}

// NormalizeLevel returns the detected_level value of a level as sent
// ("WARNING" → "warn", "err" → "error", pino's "50" → "error"); values it
// does not know are kept as given. Other ingest paths (OTLP severity_text)
// use it so that every path writes the same level names.
func NormalizeLevel(v string) string { return normalizeLevel(v) }

// normalizeLevel maps the usual spellings to Loki's level names; other
// values are kept as given.
func normalizeLevel(v string) string {
	switch strings.ToLower(v) {
	case "trace", "trc":
		return levelTrace
	case "debug", "dbg":
		return levelDebug
	case "info", "inf", "information", "informational", "notice":
		return levelInfo
	case "warn", "warning", "wrn":
		return levelWarn
	case "error", "err", "eror":
		return levelError
	case "critical", "crit":
		return levelCritical
	case "fatal", "panic", "emergency", "alert":
		return levelFatal
	// Numeric levels of pino/bunyan JSON loggers.
	case "10":
		return levelTrace
	case "20":
		return levelDebug
	case "30":
		return levelInfo
	case "40":
		return levelWarn
	case "50":
		return levelError
	case "60":
		return levelFatal
	}
	return v
}

// detectLevel finds the level of a line: a level field of a JSON object or
// of logfmt, else the first level keyword (case-insensitive whole word).
func detectLevel(line string) string {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
		if v, ok := jsonLevel(t); ok {
			return normalizeLevel(v)
		}
	} else if v, ok := logfmtLevel(t); ok {
		return normalizeLevel(v)
	}
	return keywordLevel(line)
}

// jsonLevel finds "<level key>": "<value>" (or a number) in a JSON object
// without parsing it.
func jsonLevel(s string) (string, bool) {
	for _, k := range levelKeys {
		i := strings.Index(s, `"`+k+`"`)
		if i < 0 {
			continue
		}
		rest := strings.TrimLeft(s[i+len(k)+2:], " \t")
		if !strings.HasPrefix(rest, ":") {
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		if strings.HasPrefix(rest, `"`) {
			if j := strings.IndexByte(rest[1:], '"'); j >= 0 {
				return rest[1 : 1+j], true
			}
			continue
		}
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j > 0 {
			return rest[:j], true
		}
	}
	return "", false
}

// logfmtLevel finds <level key>=value at the start of s or after a space.
func logfmtLevel(s string) (string, bool) {
	for _, k := range levelKeys {
		for off := 0; ; {
			i := strings.Index(s[off:], k+"=")
			if i < 0 {
				break
			}
			i += off
			off = i + len(k) + 1
			if i > 0 && s[i-1] != ' ' && s[i-1] != '\t' {
				continue
			}
			v := s[off:]
			if strings.HasPrefix(v, `"`) {
				if j := strings.IndexByte(v[1:], '"'); j >= 0 {
					return v[1 : 1+j], true
				}
				continue
			}
			if j := strings.IndexAny(v, " \t"); j >= 0 {
				v = v[:j]
			}
			if v != "" {
				return v, true
			}
		}
	}
	return "", false
}

// keywordLevel returns the level of the first level keyword of line, or
// "unknown".
func keywordLevel(line string) string {
	for i := 0; i < len(line); {
		c := line[i]
		if !isLetter(c) {
			i++
			continue
		}
		j := i
		for j < len(line) && isLetter(line[j]) {
			j++
		}
		w := line[i:j]
		i = j
		if len(w) < 3 || len(w) > 8 {
			continue
		}
		switch strings.ToLower(w) {
		case "trace":
			return levelTrace
		case "debug":
			return levelDebug
		case "info":
			return levelInfo
		case "warn", "warning":
			return levelWarn
		case "error", "err":
			return levelError
		case "critical":
			return levelCritical
		case "fatal", "panic":
			return levelFatal
		}
	}
	return levelUnknown
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
