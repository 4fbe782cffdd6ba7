// Package gitea runs a real Gitea forge for legate's tests: built from source
// by `make tools`, started on a free loopback port with SQLite in a temporary
// directory, with an admin user and an API token, and stopped in t.Cleanup.
package gitea

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/legate-dev/legate/test/internal/legateproc"
	"github.com/legate-dev/legate/test/internal/tooling"
)

const (
	// AdminUser and AdminPassword are the credentials of the admin account
	// every harness instance creates.
	AdminUser     = "legate-admin"
	AdminPassword = "legate-test-password-1"
	adminEmail    = "admin@legate.test"

	startTimeout = 2 * time.Minute
)

// Server is a running Gitea.
type Server struct {
	// URL is the HTTP root, e.g. http://127.0.0.1:34567/ (with trailing slash).
	URL string
	// Token is an API token of the admin with every scope.
	Token string

	t       testing.TB
	binary  string
	config  string
	workDir string
	env     []string
	addr    string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	logs *legateproc.Output
}

// Options tune a harness instance.
type Options struct {
	// ExtraConfig is appended to app.ini (for example a [webhook] section).
	ExtraConfig string
}

// Start builds the configuration, creates the database and the admin user,
// starts Gitea and waits until its API answers. Gitea is stopped, and its
// process group killed, when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	binary, ok := tooling.Find("LEGATE_GITEA", "gitea")
	if !ok {
		tooling.Missing(t, "gitea", "no executable in $LEGATE_GITEA, bin/gitea or PATH")
	}
	staticRoot := staticRootPath()
	if staticRoot == "" {
		tooling.Missing(t, "gitea templates", "set LEGATE_GITEA_ROOT or build bin/gitea.root with `make tools`")
	}

	port, err := freePort()
	if err != nil {
		t.Fatalf("find a free port for gitea: %v", err)
	}
	work := t.TempDir()
	s := &Server{
		t:       t,
		binary:  binary,
		workDir: work,
		config:  filepath.Join(work, "custom", "conf", "app.ini"),
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		env: append(os.Environ(),
			"GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true",
			"GITEA_WORK_DIR="+work,
			"GITEA_CUSTOM="+filepath.Join(work, "custom"),
			"HOME="+work,
		),
	}
	s.URL = "http://" + s.addr + "/"
	if err := os.MkdirAll(filepath.Dir(s.config), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.config, []byte(appINI(work, staticRoot, port)+"\n"+opts.ExtraConfig+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.run("migrate")
	s.run("admin", "user", "create", "--admin",
		"--username", AdminUser, "--password", AdminPassword, "--email", adminEmail,
		"--must-change-password=false")

	// The port was free when freePort looked, but the tests start API
	// servers, etcds and proxies beside Gitea, and one of them may take it
	// first: Gitea then logs the bind error and never serves. Try another
	// port, a few times.
	t.Cleanup(s.Stop)
	for attempt := 1; ; attempt++ {
		err := s.start()
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == maxPortAttempts {
			t.Fatalf("start gitea: %v", err)
		}
		t.Logf("gitea: %v; trying another port", err)
		if port, err = freePort(); err != nil {
			t.Fatalf("find a free port for gitea: %v", err)
		}
		if err := s.usePort(port); err != nil {
			t.Fatal(err)
		}
	}

	s.Token = s.createToken()
	return s
}

// staticRootPath is Gitea's source directory with options/ and templates/.
func staticRootPath() string {
	if dir := os.Getenv("LEGATE_GITEA_ROOT"); dir != "" {
		return dir
	}
	data, err := os.ReadFile(filepath.Join(tooling.BinDir(), "gitea.root"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

func appINI(work, staticRoot string, port int) string {
	secret := randomHex(32)
	return fmt.Sprintf(`APP_NAME = legate test forge
RUN_MODE = prod
RUN_USER = %[4]s
WORK_PATH = %[1]s

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[3]d
ROOT_URL = http://127.0.0.1:%[3]d/
DOMAIN = 127.0.0.1
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = %[2]s
APP_DATA_PATH = %[1]s/data

[database]
DB_TYPE = sqlite3
PATH = %[1]s/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = %[1]s/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = %[5]s
INTERNAL_TOKEN = %[6]s
PASSWORD_HASH_ALGO = pbkdf2_hi

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false

[mailer]
ENABLED = false

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[queue]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = %[1]s/log

[webhook]
ALLOWED_HOST_LIST = loopback
DELIVER_TIMEOUT = 10
`, work, staticRoot, port, currentUser(), secret, "legate"+randomHex(40))
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "root"
}

// run executes a one-shot gitea subcommand against the instance's config.
func (s *Server) run(args ...string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.binary, append(args, "--config", s.config)...)
	cmd.Dir = s.workDir
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("gitea %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (s *Server) createToken() string {
	s.t.Helper()
	body := map[string]any{"name": "legate-tests", "scopes": []string{"all"}}
	var out struct {
		Sha1 string `json:"sha1"`
	}
	if err := s.do(http.MethodPost, "api/v1/users/"+AdminUser+"/tokens", body, &out, true); err != nil {
		s.t.Fatalf("create gitea API token: %v", err)
	}
	if out.Sha1 == "" {
		s.t.Fatal("gitea returned an empty API token")
	}
	return out.Sha1
}

// Repository is a repository on the harness's Gitea.
type Repository struct {
	Owner         string `json:"-"`
	Name          string `json:"name"`
	FullName      string `json:"full_name"`
	CloneURL      string `json:"clone_url"`
	DefaultBranch string `json:"default_branch"`
}

// CreateRepo creates an empty repository owned by the admin.
func (s *Server) CreateRepo(name string) *Repository {
	s.t.Helper()
	var repo Repository
	body := map[string]any{"name": name, "private": false, "auto_init": false, "default_branch": "main"}
	if err := s.API(http.MethodPost, "api/v1/user/repos", body, &repo); err != nil {
		s.t.Fatalf("create gitea repository %q: %v", name, err)
	}
	repo.Owner = AdminUser
	return &repo
}

// PushURL is the repository's HTTP clone URL with the admin's token as
// credentials, for `git push`.
func (s *Server) PushURL(repo *Repository) string {
	u, err := url.Parse(repo.CloneURL)
	if err != nil {
		s.t.Fatalf("parse clone URL %q: %v", repo.CloneURL, err)
	}
	u.User = url.UserPassword(AdminUser, s.Token)
	return u.String()
}

// API calls Gitea's REST API with the admin token; path is relative to the
// root (e.g. "api/v1/repos/o/r"). in is sent as JSON when not nil; out is
// decoded from the JSON answer when not nil.
func (s *Server) API(method, path string, in, out any) error {
	return s.do(method, path, in, out, false)
}

func (s *Server) do(method, path string, in, out any, basic bool) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if basic {
		req.SetBasicAuth(AdminUser, AdminPassword)
	} else {
		req.Header.Set("Authorization", "token "+s.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return &APIError{Method: method, Path: path, Status: resp.StatusCode, Body: string(data)}
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, out)
}

// APIError is a non-2xx answer of Gitea's API.
type APIError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("gitea %s /%s: HTTP %d: %s", e.Method, e.Path, e.Status, strings.TrimSpace(e.Body))
}

// IsNotFound reports whether err is a 404 from Gitea's API.
func IsNotFound(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
