package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

// clientFlags are how weft-bench reaches a weft with TLS and credentials
// (docs/security.md): the same flags as weft-agent's.
type clientFlags struct {
	caFile, certFile, keyFile, serverName string
	insecure                              bool
	user, passwordFile, tokenFile         string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.caFile, "tls-ca-file", "", "PEM file of the CAs that sign the target's certificate (empty: system roots)")
	fs.StringVar(&c.certFile, "tls-cert-file", "", "client certificate (PEM) for mutual TLS")
	fs.StringVar(&c.keyFile, "tls-key-file", "", "client key (PEM) for mutual TLS")
	fs.StringVar(&c.serverName, "tls-server-name", "", "name to check the target's certificate against (default: the URL's host)")
	fs.BoolVar(&c.insecure, "tls-insecure-skip-verify", false, "accept any server certificate (unsafe; for tests)")
	fs.StringVar(&c.user, "basic-auth-user", "", "HTTP basic auth user")
	fs.StringVar(&c.passwordFile, "basic-auth-password-file", "", "file holding the basic auth password")
	fs.StringVar(&c.tokenFile, "bearer-token-file", "", "file holding a bearer token (Authorization: Bearer)")
}

// build returns the HTTP client and the Authorization header value ("" for
// none) the flags ask for.
func (c *clientFlags) build(timeout time.Duration) (*http.Client, string, error) {
	if (c.certFile == "") != (c.keyFile == "") {
		return nil, "", errors.New("-tls-cert-file and -tls-key-file go together")
	}
	if c.user != "" && c.tokenFile != "" {
		return nil, "", errors.New("-basic-auth-user and -bearer-token-file are mutually exclusive")
	}
	if c.passwordFile != "" && c.user == "" {
		return nil, "", errors.New("-basic-auth-password-file needs -basic-auth-user")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.serverName, InsecureSkipVerify: c.insecure} // skip only when asked
	if c.caFile != "" {
		b, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, "", fmt.Errorf("read -tls-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, "", fmt.Errorf("-tls-ca-file %s holds no PEM certificate", c.caFile)
		}
		cfg.RootCAs = pool
	}
	if c.certFile != "" {
		kp, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			return nil, "", fmt.Errorf("load client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	var authz string
	switch {
	case c.tokenFile != "":
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, "", fmt.Errorf("read -bearer-token-file: %w", err)
		}
		authz = "Bearer " + strings.TrimSpace(string(b))
	case c.user != "":
		var pw string
		if c.passwordFile != "" {
			b, err := os.ReadFile(c.passwordFile)
			if err != nil {
				return nil, "", fmt.Errorf("read -basic-auth-password-file: %w", err)
			}
			pw = strings.TrimRight(string(b), "\r\n")
		}
		authz = "Basic " + base64.StdEncoding.EncodeToString([]byte(c.user+":"+pw))
	}
	return &http.Client{Transport: tr, Timeout: timeout}, authz, nil
}
