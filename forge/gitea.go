package forge

import (
	"context"
	"fmt"

	"code.gitea.io/sdk/gitea"
)

// Gitea posts statuses through the Gitea API
// (POST /api/v1/repos/{owner}/{repo}/statuses/{sha}).
type Gitea struct {
	cfg         Config
	owner, name string
}

// NewGitea returns a Gitea reporter.
func NewGitea(cfg Config) (*Gitea, error) {
	owner, name, err := splitRepo(cfg.Repository)
	if err != nil {
		return nil, fmt.Errorf("gitea reporter: %w", err)
	}
	if cfg.BaseURL == "" {
		return nil, fmt.Errorf("gitea reporter: set the base url of the Gitea server")
	}
	return &Gitea{cfg: cfg, owner: owner, name: name}, nil
}

var giteaStates = map[State]gitea.StatusState{
	StatePending: gitea.StatusPending,
	StateSuccess: gitea.StatusSuccess,
	StateFailure: gitea.StatusFailure,
}

// Post implements Reporter.
func (g *Gitea) Post(ctx context.Context, st Status) error {
	st, tok, err := g.cfg.prepare(ctx, st, GiteaDescriptionLimit)
	if err != nil {
		return err
	}
	// The SDK's context is per client, so each post gets its own client;
	// skipping the version probe keeps that to one request.
	client, err := gitea.NewClient(g.cfg.BaseURL,
		gitea.SetHTTPClient(g.cfg.httpClient()),
		gitea.SetToken(tok),
		gitea.SetContext(ctx),
		gitea.SetGiteaVersion(""),
	)
	if err != nil {
		return postError(g.cfg.Repository, 0, err, tok)
	}
	_, resp, err := client.CreateStatus(g.owner, g.name, st.Commit, gitea.CreateStatusOption{
		State:       giteaStates[st.State],
		TargetURL:   st.TargetURL,
		Description: st.Description,
		Context:     st.Context,
	})
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		return postError(g.cfg.Repository, code, err, tok)
	}
	return nil
}
