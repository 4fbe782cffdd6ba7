package git

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing"
)

const (
	headsPrefix = "refs/heads/"
	tagsPrefix  = "refs/tags/"
	peeledMark  = "^{}"
)

// target is what a Ref resolves to against the remote's advertised refs.
type target struct {
	// refName is the remote ref to fetch; "" fetches every branch.
	refName string
	// commit is the expected commit SHA (tags peeled); "" when unknown
	// before fetching (a pinned commit on an unknown branch never is).
	commit string
	// display is Origin.Ref: the branch, tag or full name followed.
	display string
}

// advertised maps ref names to hashes as a remote lists them, peeled tags
// under "<name>^{}", plus the target of a symbolic HEAD under "HEAD".
type advertised map[string]string

func toAdvertised(refs []*plumbing.Reference) advertised {
	adv := advertised{}
	for _, r := range refs {
		if r.Type() == plumbing.SymbolicReference {
			adv[r.Name().String()] = r.Target().String()
			continue
		}
		adv[r.Name().String()] = r.Hash().String()
	}
	return adv
}

// commitOf returns the commit a ref points at: the peeled hash for annotated
// tags, the ref's own hash otherwise.
func (a advertised) commitOf(name string) string {
	if p, ok := a[name+peeledMark]; ok {
		return p
	}
	return a[name]
}

// resolve applies Flux's precedence: commit > name > semver > tag > branch.
func resolve(ref Ref, adv advertised) (target, error) {
	switch {
	case ref.Commit != "":
		t := target{commit: ref.Commit, display: "HEAD"}
		if ref.Branch != "" {
			name := headsPrefix + ref.Branch
			if _, ok := adv[name]; !ok {
				return target{}, fmt.Errorf("branch %q not found in the remote repository", ref.Branch)
			}
			t.refName, t.display = name, ref.Branch
		}
		return t, nil
	case ref.Name != "":
		if !strings.HasPrefix(ref.Name, "refs/") {
			return target{}, fmt.Errorf("ref name %q must be a full name starting with refs/", ref.Name)
		}
		if _, ok := adv[ref.Name]; !ok {
			return target{}, fmt.Errorf("ref %q not found in the remote repository", ref.Name)
		}
		return target{refName: ref.Name, commit: adv.commitOf(ref.Name), display: ref.Name}, nil
	case ref.SemVer != "":
		return resolveSemVer(ref.SemVer, adv)
	case ref.Tag != "":
		name := tagsPrefix + ref.Tag
		if _, ok := adv[name]; !ok {
			return target{}, fmt.Errorf("tag %q not found in the remote repository", ref.Tag)
		}
		return target{refName: name, commit: adv.commitOf(name), display: ref.Tag}, nil
	case ref.Branch != "":
		name := headsPrefix + ref.Branch
		if _, ok := adv[name]; !ok {
			return target{}, fmt.Errorf("branch %q not found in the remote repository", ref.Branch)
		}
		return target{refName: name, commit: adv[name], display: ref.Branch}, nil
	default:
		name, err := defaultBranch(adv)
		if err != nil {
			return target{}, err
		}
		return target{refName: name, commit: adv[name], display: strings.TrimPrefix(name, headsPrefix)}, nil
	}
}

func resolveSemVer(rng string, adv advertised) (target, error) {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return target{}, fmt.Errorf("semver range %q: %w", rng, err)
	}
	var best *semver.Version
	bestTag := ""
	for name := range adv {
		if !strings.HasPrefix(name, tagsPrefix) || strings.HasSuffix(name, peeledMark) {
			continue
		}
		tag := strings.TrimPrefix(name, tagsPrefix)
		v, err := semver.NewVersion(tag)
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) || (v.Equal(best) && tag < bestTag) {
			best, bestTag = v, tag
		}
	}
	if best == nil {
		return target{}, fmt.Errorf("no tag in the remote repository matches semver range %q", rng)
	}
	name := tagsPrefix + bestTag
	return target{refName: name, commit: adv.commitOf(name), display: bestTag}, nil
}

// defaultBranch is the branch HEAD points at; when the server does not say,
// the branch whose commit equals HEAD's (preferring main, then master).
func defaultBranch(adv advertised) (string, error) {
	head, ok := adv["HEAD"]
	if !ok {
		return "", fmt.Errorf("the remote repository has no HEAD: set a branch, tag, semver range, name or commit")
	}
	if strings.HasPrefix(head, headsPrefix) {
		if _, ok := adv[head]; ok {
			return head, nil
		}
		return "", fmt.Errorf("the remote HEAD points at %q, which does not exist: set a branch", head)
	}
	var candidates []string
	for name, hash := range adv {
		if strings.HasPrefix(name, headsPrefix) && hash == head {
			candidates = append(candidates, name)
		}
	}
	if len(candidates) == 0 {
		return "", fmt.Errorf("cannot tell which branch the remote HEAD is: set a branch")
	}
	sort.Slice(candidates, func(i, j int) bool { return rank(candidates[i]) < rank(candidates[j]) })
	return candidates[0], nil
}

func rank(name string) string {
	switch name {
	case headsPrefix + "main":
		return "0"
	case headsPrefix + "master":
		return "1"
	}
	return "2" + name
}
