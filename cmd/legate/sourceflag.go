package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
	gitsource "github.com/legate-dev/legate/sources/git"
)

// sourceFlagHelp documents the compact syntax of `--source`.
const sourceFlagHelp = `a source as comma-separated key=value pairs (repeatable), e.g.
  name=edge,git=https://git.example/org/cfg.git,branch=main,path=envoy
  name=ci,oci=oci://registry.example/cfg,semver=^1.0,insecure=true
keys: name, git|oci, path, interval, secrets (granted secret refs
  beyond secretsDir/<name>, '+'-separated, e.g. shared/ca+wildcards/*);
  git refs: branch, tag, semver, refname, commit; git auth: username,
  password-file|password-env, bearer-file|bearer-env, ssh-key-file|ssh-key-env,
  ssh-passphrase-file|ssh-passphrase-env, known-hosts; timeout, depth;
  oci: tag, semver, digest, docker-config, insecure, timeout;
  commit statuses: forge=gitea|github|gitlab, forge-url, forge-repo,
  forge-token-file|forge-token-env;
  pull-request previews: previews=true, preview-concurrency=N.
Values cannot contain commas.`

// parseSourceFlag reads one `--source` value (see sourceFlagHelp).
func parseSourceFlag(v string) (serveconfig.SourceConfig, error) {
	kv := map[string]string{}
	var order []string
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return serveconfig.SourceConfig{}, fmt.Errorf("--source %q: %q is not key=value", redactFlag(v), part)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if _, dup := kv[k]; dup {
			return serveconfig.SourceConfig{}, fmt.Errorf("--source %q: key %q given twice", redactFlag(v), k)
		}
		kv[k] = strings.TrimSpace(val)
		order = append(order, k)
	}
	var sc serveconfig.SourceConfig
	sc.Name = kv["name"]
	if u, ok := kv["git"]; ok {
		sc.Git = &serveconfig.GitSource{URL: u}
	}
	if u, ok := kv["oci"]; ok {
		sc.OCI = &serveconfig.OCISource{URL: u}
	}
	if sc.Git == nil && sc.OCI == nil {
		for _, k := range order {
			if s := render.Suggest(k, []string{"git", "oci"}); s != "" {
				return sc, fmt.Errorf("--source %q: unknown key %q, did you mean %s", redactFlag(v), k, s)
			}
		}
		return sc, fmt.Errorf("--source %q: set git=<url> or oci=<url>", redactFlag(v))
	}
	auth := func() *serveconfig.GitAuth {
		if sc.Git.Auth == nil {
			sc.Git.Auth = &serveconfig.GitAuth{}
		}
		return sc.Git.Auth
	}
	ref := func() *gitsource.Ref {
		if sc.Git.Ref == nil {
			sc.Git.Ref = &gitsource.Ref{}
		}
		return sc.Git.Ref
	}
	frg := func() *serveconfig.ForgeConfig {
		if sc.Forge == nil {
			sc.Forge = &serveconfig.ForgeConfig{}
		}
		return sc.Forge
	}
	for _, k := range order {
		val := kv[k]
		var err error
		gitOnly := func() bool {
			if sc.Git == nil {
				err = fmt.Errorf("key %q applies to git sources only", k)
				return false
			}
			return true
		}
		ociOnly := func() bool {
			if sc.OCI == nil {
				err = fmt.Errorf("key %q applies to oci sources only", k)
				return false
			}
			return true
		}
		switch k {
		case "name", "git", "oci":
		case "path":
			sc.Path = val
		case "secrets":
			sc.Secrets = strings.Split(val, "+")
		case "interval":
			sc.Interval.Duration, err = time.ParseDuration(val)
		case "timeout":
			var d time.Duration
			if d, err = time.ParseDuration(val); err == nil {
				if sc.Git != nil {
					sc.Git.Timeout.Duration = d
				} else {
					sc.OCI.Timeout.Duration = d
				}
			}
		case "branch":
			if gitOnly() {
				sc.Git.Branch = val
			}
		case "tag":
			if sc.Git != nil {
				ref().Tag = val
			} else {
				sc.OCI.Tag = val
			}
		case "semver":
			if sc.Git != nil {
				ref().SemVer = val
			} else {
				sc.OCI.SemVer = val
			}
		case "refname":
			if gitOnly() {
				ref().Name = val
			}
		case "commit":
			if gitOnly() {
				ref().Commit = val
			}
		case "depth":
			if gitOnly() {
				sc.Git.Depth, err = strconv.Atoi(val)
			}
		case "username":
			if gitOnly() {
				auth().Username = val
			}
		case "password-file", "password-env":
			if gitOnly() {
				setSecret(&auth().Password, k, val)
			}
		case "bearer-file", "bearer-env":
			if gitOnly() {
				setSecret(&auth().BearerToken, k, val)
			}
		case "ssh-key-file", "ssh-key-env":
			if gitOnly() {
				setSecret(&auth().SSHKey, k, val)
			}
		case "ssh-passphrase-file", "ssh-passphrase-env":
			if gitOnly() {
				setSecret(&auth().SSHKeyPassphrase, k, val)
			}
		case "known-hosts":
			if gitOnly() {
				auth().KnownHosts = val
			}
		case "digest":
			if ociOnly() {
				sc.OCI.Digest = val
			}
		case "docker-config":
			if ociOnly() {
				sc.OCI.DockerConfig = val
			}
		case "insecure":
			if ociOnly() {
				sc.OCI.Insecure, err = strconv.ParseBool(val)
			}
		case "forge":
			frg().Provider = forge.Provider(val)
		case "forge-url":
			frg().BaseURL = val
		case "forge-repo":
			frg().Repository = val
		case "forge-token-file", "forge-token-env":
			setSecret(&frg().Token, k, val)
		case "previews":
			if sc.Previews == nil {
				sc.Previews = &serveconfig.PreviewsConfig{}
			}
			sc.Previews.Enabled, err = strconv.ParseBool(val)
		case "preview-concurrency":
			if sc.Previews == nil {
				sc.Previews = &serveconfig.PreviewsConfig{}
			}
			sc.Previews.Concurrency, err = strconv.Atoi(val)
		default:
			err = fmt.Errorf("unknown key %q%s", k, render.DidYouMean(k, sourceFlagKeys))
		}
		if err != nil {
			return sc, fmt.Errorf("--source %q: %s: %w", redactFlag(v), k, err)
		}
	}
	return sc, nil
}

// sourceFlagKeys are the keys --source takes, for "did you mean".
var sourceFlagKeys = []string{
	"name", "git", "oci", "path", "secrets", "interval", "timeout", "branch", "tag", "semver", "refname", "commit", "depth",
	"username", "password-file", "password-env", "bearer-file", "bearer-env", "ssh-key-file", "ssh-key-env",
	"ssh-passphrase-file", "ssh-passphrase-env", "known-hosts", "digest", "docker-config", "insecure",
	"forge", "forge-url", "forge-repo", "forge-token-file", "forge-token-env", "previews", "preview-concurrency",
}

func setSecret(s *sources.Secret, key, val string) {
	if strings.HasSuffix(key, "-env") {
		s.Env = val
	} else {
		s.File = val
	}
}

// redactFlag keeps credentials in URLs out of error messages.
func redactFlag(v string) string { return sources.Redact(v) }
