package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/legate-dev/legate/serveconfig"
)

// tokenFlags find the admin token of a running legate serve for the
// commands that change its state.
type tokenFlags struct {
	tokenFile string
	stateDir  string
}

func (f *tokenFlags) bind(fl *pflag.FlagSet) {
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding legate's admin token, or for reads its read token (default: $LEGATE_TOKEN, $LEGATE_TOKEN_FILE, or admin-token under --state-dir)")
	fl.StringVar(&f.stateDir, "state-dir", serveconfig.DefaultStateDir, "legate serve's state directory, where it keeps the admin token it made")
}

// token returns the admin token: from --token-file, $LEGATE_TOKEN,
// $LEGATE_TOKEN_FILE, or the file legate serve makes in its state
// directory, in that order.
func (f *tokenFlags) token() (string, error) {
	path := f.tokenFile
	if path == "" {
		if tok := strings.TrimSpace(os.Getenv("LEGATE_TOKEN")); tok != "" {
			return tok, nil
		}
		path = os.Getenv("LEGATE_TOKEN_FILE")
	}
	if path == "" {
		path = filepath.Join(f.stateDir, serveconfig.AdminTokenName)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("no admin token: %s does not exist; pass --token-file, set LEGATE_TOKEN or LEGATE_TOKEN_FILE, or --state-dir as given to legate serve", path)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the admin token: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("admin token file %s is empty", path)
	}
	return tok, nil
}

// explicit reports whether the token was named by --token-file or the
// environment rather than found in the state directory.
func (f *tokenFlags) explicit() bool {
	return f.tokenFile != "" || os.Getenv("LEGATE_TOKEN") != "" || os.Getenv("LEGATE_TOKEN_FILE") != ""
}
