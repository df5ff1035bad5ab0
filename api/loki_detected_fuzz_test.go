package api

import (
	"slices"
	"testing"
)

// FuzzDetectedFields fuzzes the field detection of detected_fields over
// one line: it never panics, every field name is a sanitized label name,
// JSON fields carry their key path (at most maxFieldDepth keys), and every
// type is one of Loki's.
func FuzzDetectedFields(f *testing.F) {
	for _, s := range []string{
		`level=info msg="request done" trace_id=0af7651916cd43dd8448eb211c80319c latency=1.5s size=10KB`,
		`{"level":"warn","msg":"slow","latency":"1.5s","a":{"b":[1,{"c":null}],"d":true,"1e":1e3}}`,
		`{"":"","ü":"x","a.b":{"c-d":1}}`, `key= ="v" a="unterminated b=\"q\"`, `{"a":` + `{"a":1}}`,
		`{`, `}{`, `==`, "\xff=\xfe", `{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}}}`,
	} {
		f.Add(s)
	}
	types := []string{"string", "int", "float", "boolean", "duration", "bytes"}
	f.Fuzz(func(t *testing.T, line string) {
		typ := map[string]string{}
		lineFields(line, func(name, value, parser string, path []string) {
			for i := 0; i < len(name); i++ {
				c := name[i]
				if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0) {
					t.Fatalf("field name %q", name)
				}
			}
			switch parser {
			case "json":
				if len(path) == 0 || len(path) > maxFieldDepth {
					t.Fatalf("json field %q with path %q", name, path)
				}
			case "logfmt":
				if path != nil {
					t.Fatalf("logfmt field %q with path %q", name, path)
				}
			default:
				t.Fatalf("parser %q", parser)
			}
			ft := fieldType(value)
			if !slices.Contains(types, ft) {
				t.Fatalf("type %q of %q", ft, value)
			}
			typ[name] = mergeType(typ[name], ft)
			if !slices.Contains(types, typ[name]) {
				t.Fatalf("merged type %q", typ[name])
			}
		})
	})
}
