package localhub

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// stateFile is the JSON document that holds everything but git objects and refs.
const stateFile = "state.json"

// state is the hub's persisted model. Git objects and refs are not in it: they
// live in the bare repositories, the one place both git and REST read.
type state struct {
	NextID        int64                   `json:"nextID"`
	App           appState                `json:"app"`
	WebhookSecret string                  `json:"webhookSecret"`
	Installations []*installation         `json:"installations"`
	Tokens        map[string]*accessToken `json:"tokens"`
	Repos         map[string]*repoState   `json:"repos"`
}

type appState struct {
	ID     int64  `json:"id"`
	Slug   string `json:"slug"`
	Name   string `json:"name"`
	Owner  string `json:"owner"`
	KeyPEM string `json:"keyPEM"`
}

type installation struct {
	ID      int64     `json:"id"`
	Account string    `json:"account"`
	Created time.Time `json:"created"`
	// SuspendedAt is set while the installation is suspended.
	SuspendedAt *time.Time `json:"suspendedAt,omitempty"`
}

type accessToken struct {
	Installation int64     `json:"installation,omitempty"`
	User         string    `json:"user,omitempty"`  // a person's token: acts as this login
	ExpiresAt    time.Time `json:"expiresAt"`       // zero: never expires
	Repos        []string  `json:"repos,omitempty"` // full names; empty means all of the installation's
}

type repoState struct {
	ID             int64                  `json:"id"`
	Owner          string                 `json:"owner"`
	Name           string                 `json:"name"`
	DefaultBranch  string                 `json:"defaultBranch"`
	Private        bool                   `json:"private"`
	AllowAutoMerge bool                   `json:"allowAutoMerge"`
	AllowMerge     bool                   `json:"allowMergeCommit"`
	AllowSquash    bool                   `json:"allowSquashMerge"`
	AllowRebase    bool                   `json:"allowRebaseMerge"`
	Created        time.Time              `json:"created"`
	Protection     map[string]*protection `json:"protection,omitempty"`
	NextNumber     int                    `json:"nextNumber"`
	Issues         []*issue               `json:"issues,omitempty"`
	Labels         []*label               `json:"labels,omitempty"`
	Comments       []*comment             `json:"comments,omitempty"`
	CheckRuns      []*checkRun            `json:"checkRuns,omitempty"`
	Statuses       []*commitStatus        `json:"statuses,omitempty"`
	Verified       map[string]bool        `json:"verified,omitempty"` // commits GitHub would have signed
	Events         []*repoEvent           `json:"events,omitempty"`   // the events API, oldest first
	// Permissions are users' permission levels on the repository (read,
	// triage, write, maintain, admin); a user not listed has write.
	Permissions map[string]string `json:"permissions,omitempty"`
}

func (r *repoState) fullName() string { return r.Owner + "/" + r.Name }

type protection struct {
	RequiredChecks []string `json:"requiredChecks"`
	Strict         bool     `json:"strict"`
}

type issue struct {
	ID        int64      `json:"id"`
	Number    int        `json:"number"`
	Title     string     `json:"title"`
	Body      string     `json:"body"`
	State     string     `json:"state"`
	User      string     `json:"user"`
	Labels    []string   `json:"labels,omitempty"`
	Assignees []string   `json:"assignees,omitempty"`
	Created   time.Time  `json:"created"`
	Updated   time.Time  `json:"updated"`
	Closed    *time.Time `json:"closed,omitempty"`
	Pull      *pull      `json:"pull,omitempty"`
}

type pull struct {
	HeadRef        string     `json:"headRef"`
	HeadSHA        string     `json:"headSHA"`
	BaseRef        string     `json:"baseRef"`
	BaseSHA        string     `json:"baseSHA"`
	Draft          bool       `json:"draft"`
	Merged         bool       `json:"merged"`
	MergedAt       *time.Time `json:"mergedAt,omitempty"`
	MergedBy       string     `json:"mergedBy,omitempty"`
	MergeCommitSHA string     `json:"mergeCommitSHA,omitempty"`
	Reviewers      []string   `json:"reviewers,omitempty"`
	TeamReviewers  []string   `json:"teamReviewers,omitempty"`
	AutoMerge      *autoMerge `json:"autoMerge,omitempty"`
	// Computing says GitHub's background mergeability job has not run
	// since the head or the base moved: the next read of the pull request
	// answers mergeable null, and starts it.
	Computing bool `json:"computing,omitempty"`
}

type autoMerge struct {
	EnabledBy string    `json:"enabledBy"`
	Method    string    `json:"method"` // merge, squash or rebase
	EnabledAt time.Time `json:"enabledAt"`
	Title     string    `json:"title,omitempty"`
	Message   string    `json:"message,omitempty"`
}

type label struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Color       string `json:"color"`
	Description string `json:"description,omitempty"`
}

type comment struct {
	ID      int64     `json:"id"`
	Issue   int       `json:"issue"`
	Body    string    `json:"body"`
	User    string    `json:"user"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

type checkRun struct {
	ID          int64      `json:"id"`
	Name        string     `json:"name"`
	HeadSHA     string     `json:"headSHA"`
	Status      string     `json:"status"`
	Conclusion  string     `json:"conclusion,omitempty"`
	DetailsURL  string     `json:"detailsURL,omitempty"`
	ExternalID  string     `json:"externalID,omitempty"`
	Title       string     `json:"title,omitempty"`
	Summary     string     `json:"summary,omitempty"`
	Text        string     `json:"text,omitempty"`
	StartedAt   time.Time  `json:"startedAt"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	App         int64      `json:"app"`
}

type commitStatus struct {
	ID          int64     `json:"id"`
	SHA         string    `json:"sha"`
	State       string    `json:"state"`
	Context     string    `json:"context"`
	Description string    `json:"description,omitempty"`
	TargetURL   string    `json:"targetURL,omitempty"`
	Creator     string    `json:"creator"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
}

// loadState reads dir/state.json; a missing file is an empty state.
func loadState(dir string) (*state, error) {
	st := &state{NextID: 1, Tokens: map[string]*accessToken{}, Repos: map[string]*repoState{}}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading hub state: %w", err)
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	if st.Tokens == nil {
		st.Tokens = map[string]*accessToken{}
	}
	if st.Repos == nil {
		st.Repos = map[string]*repoState{}
	}
	return st, nil
}

// saveState writes the state atomically (temp file and rename), so a crash
// leaves either the old or the new document.
func saveState(dir string, st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding hub state: %w", err)
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing hub state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return fmt.Errorf("writing hub state: %w", err)
	}
	return nil
}

func (st *state) newID() int64 {
	id := st.NextID
	st.NextID++
	return id
}
