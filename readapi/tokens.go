package readapi

import (
	"fmt"
	"os"
	"strings"
)

// TokenFile reads the token a file holds (its content without surrounding
// white space). setting names the file's setting in errors
// ("readTokenFile"): an unreadable or empty file is the operator's to fix.
func TokenFile(setting, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", setting, err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("%s: the file %s is empty", setting, path)
	}
	return token, nil
}
