package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/weftdb/weft/cmd/weft/internal/app"
)

// The deploy files in docs/deploy start weft with flags and a config file
// this binary accepts, and probe the endpoints it serves.

func TestDeployStatefulSet(t *testing.T) {
	b, err := os.ReadFile("../../docs/deploy/weft-statefulset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var (
		args     []string
		probes   = map[string]string{}
		ports    = map[string]int{}
		config   string
		services = map[string]bool{}
		pvc      bool
	)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
			Data     map[string]string
			Spec     struct {
				Template struct {
					Spec struct {
						Containers []yaml.Node
					}
				}
				VolumeClaimTemplates []any `yaml:"volumeClaimTemplates"`
			}
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch doc.Kind {
		case "ConfigMap":
			config = doc.Data["weft.yml"]
		case "Service":
			services[doc.Metadata.Namespace+"/"+doc.Metadata.Name] = true
		case "StatefulSet":
			pvc = len(doc.Spec.VolumeClaimTemplates) == 1
			for _, n := range doc.Spec.Template.Spec.Containers {
				var c struct {
					Args  []string
					Ports []struct {
						Name          string
						ContainerPort int `yaml:"containerPort"`
					}
					Startup   probe `yaml:"startupProbe"`
					Readiness probe `yaml:"readinessProbe"`
					Liveness  probe `yaml:"livenessProbe"`
				}
				if err := n.Decode(&c); err != nil {
					t.Fatal(err)
				}
				args = c.Args
				for _, p := range c.Ports {
					ports[p.Name] = p.ContainerPort
				}
				probes["startup"], probes["readiness"], probes["liveness"] = c.Startup.HTTPGet.Path, c.Readiness.HTTPGet.Path, c.Liveness.HTTPGet.Path
			}
		}
	}
	if !services["weft/weft"] || !pvc {
		t.Fatalf("want Service weft/weft (the agent's target) and a volume claim template: %v %v", services, pvc)
	}
	if probes["startup"] != "/-/ready" || probes["readiness"] != "/-/ready" || probes["liveness"] != "/-/healthy" {
		t.Errorf("probes %v", probes)
	}
	o := parseDeployArgs(t, args, config)
	for name, addr := range map[string]string{"http": o.HTTPAddr, "otlp-grpc": o.OTLPGRPCAddr, "otlp-http": o.OTLPHTTPAddr} {
		if want := ":" + strconv.Itoa(ports[name]); addr != want {
			t.Errorf("%s listens on %q, container port %d", name, addr, ports[name])
		}
	}
	if o.DataDir != "/data" {
		t.Errorf("data dir %q is not the volume's mount", o.DataDir)
	}
}

type probe struct {
	HTTPGet struct{ Path, Port string } `yaml:"httpGet"`
}

func TestDeploySystemdUnit(t *testing.T) {
	b, err := os.ReadFile("../../docs/deploy/weft.service")
	if err != nil {
		t.Fatal(err)
	}
	var exec string
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "ExecStart=") {
			continue
		}
		exec = strings.TrimPrefix(lines[i], "ExecStart=")
		for strings.HasSuffix(exec, "\\") && i+1 < len(lines) {
			i++
			exec = strings.TrimSuffix(exec, "\\") + " " + strings.TrimSpace(lines[i])
		}
	}
	fields := strings.Fields(exec)
	if len(fields) < 2 || fields[0] != "/usr/local/bin/weft" {
		t.Fatalf("ExecStart %q", exec)
	}
	var args []string
	for _, f := range fields[1:] {
		if f != "$WEFT_FLAGS" {
			args = append(args, f)
		}
	}
	o := parseDeployArgs(t, args, "") // the unit's install step creates an empty config file
	if o.DataDir != "/var/lib/weft" || o.HTTPAddr != ":9338" || o.OTLPGRPCAddr != ":4317" || o.OTLPHTTPAddr != ":4318" {
		t.Errorf("options %+v", o)
	}
}

// parseDeployArgs parses args as weft would, with -config pointing to a
// file holding config.
func parseDeployArgs(tb testing.TB, args []string, config string) app.Options {
	tb.Helper()
	cfg := filepath.Join(tb.TempDir(), "weft.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "-config="):
			a = "-config=" + cfg
		case a == "-config" && i+1 < len(args):
			out = append(out, a)
			i++
			a = cfg
		}
		out = append(out, a)
	}
	var stderr bytes.Buffer
	o, err := parseFlags(out, &stderr)
	if err != nil {
		tb.Fatalf("weft %v: %v (%s)", out, err, stderr.String())
	}
	return o
}
