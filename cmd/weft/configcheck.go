package main

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weftdb/weft/storage"
)

type storageOptions = storage.Options

// configSchema is the type the configuration file decodes into.
var configSchema = reflect.TypeFor[fileConfig]()

// checkKeys reports the first key of n that type t has no field for, with
// its line, where it is and the keys valid there (yaml.v3's own message for
// it dumps the Go struct type). Type errors are left to the decoder.
func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if t == reflect.TypeFor[yaml.Node]() {
		return nil // decoded by its own types (Prometheus' alerting block)
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
				return nil
			}
			return fmt.Errorf("line %d: %s must be a mapping of keys", n.Line, where(path))
		}
		fields := map[string]reflect.Type{}
		var names []string
		structFields(t, fields, &names)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				return fmt.Errorf("line %d: unknown key %q in %s; valid keys: %s", k.Line, k.Value, where(path), strings.Join(names, ", "))
			}
			if err := checkKeys(v, ft, join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				if err := checkKeys(c, t.Elem(), path+"[]"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// structFields adds t's YAML keys and their types, with those of its
// inlined structs.
func structFields(t reflect.Type, fields map[string]reflect.Type, names *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opt, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opt == "inline" && f.Type.Kind() == reflect.Struct {
			structFields(f.Type, fields, names)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f.Type
		*names = append(*names, name)
	}
}

func where(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
