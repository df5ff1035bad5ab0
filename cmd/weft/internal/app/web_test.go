package app

import "testing"

// TestWebPaths: Prometheus' semantics of -web.route-prefix and
// -web.external-url, as the route prefix and the UI's base path.
func TestWebPaths(t *testing.T) {
	for _, tc := range []struct {
		name         string
		opts         WebOptions
		prefix, base string
		wantErr      bool
	}{
		{"defaults", WebOptions{}, "/", "/", false},
		{"prefix", WebOptions{RoutePrefix: "/weft"}, "/weft", "/weft/", false},
		{"prefix with slashes", WebOptions{RoutePrefix: "weft/"}, "/weft", "/weft/", false},
		{"external url sets the prefix", WebOptions{ExternalURL: "http://proxy:8080/obs/weft/"}, "/obs/weft", "/obs/weft/", false},
		{"proxy strips the path", WebOptions{ExternalURL: "https://proxy/weft", RoutePrefix: "/"}, "/", "/weft/", false},
		{"external url without path", WebOptions{ExternalURL: "http://proxy"}, "/", "/", false},
		{"bad external url", WebOptions{ExternalURL: "proxy/weft"}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix, base, err := tc.opts.paths()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if prefix != tc.prefix || base != tc.base {
				t.Fatalf("prefix %q base %q, want %q %q", prefix, base, tc.prefix, tc.base)
			}
		})
	}
}
