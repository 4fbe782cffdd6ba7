package oci

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
)

// dockerConfigKeychain resolves registry credentials from the "auths"
// section of a Docker config.json. It keeps the values it read so that
// errors can be scrubbed of them.
type dockerConfigKeychain struct {
	auths map[string]authn.AuthConfig
}

// loadDockerConfig reads the config from data when it is set (a
// kubernetes.io/dockerconfigjson Secret), else from file.
func loadDockerConfig(file string, data []byte) (*dockerConfigKeychain, []string, error) {
	kc := &dockerConfigKeychain{auths: map[string]authn.AuthConfig{}}
	if data == nil && file == "" {
		return kc, nil, nil
	}
	if data == nil {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, nil, fmt.Errorf("read docker config: %w", err)
		}
	} else {
		file = "(from a Secret)"
	}
	var cfg struct {
		Auths map[string]authn.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		// json errors quote at most a type name and an offset, never values.
		return nil, nil, fmt.Errorf("docker config %q is not valid JSON with an auths section: %w", file, err)
	}
	var secrets []string
	for host, a := range cfg.Auths {
		kc.auths[normalizeRegistry(host)] = a
		secrets = append(secrets, a.Password, a.Auth, a.IdentityToken, a.RegistryToken)
	}
	return kc, secrets, nil
}

// normalizeRegistry reduces "https://index.docker.io/v1/", "http://host:5000"
// and "host:5000/" to the host form the registry name has.
func normalizeRegistry(h string) string {
	h = strings.TrimPrefix(strings.TrimPrefix(h, "https://"), "http://")
	h, _, _ = strings.Cut(h, "/")
	if h == "docker.io" || h == "registry-1.docker.io" {
		return "index.docker.io"
	}
	return h
}

// Resolve implements authn.Keychain.
func (k *dockerConfigKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	a, ok := k.auths[normalizeRegistry(r.RegistryStr())]
	if !ok {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(a), nil
}
