package console

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The tests' OpenID provider: zitadel/oidc's op package with its example
// storage and sign-in page, on 127.0.0.1, whose users are the people the
// tests add. It signs real ID tokens with its own key, checks PKCE, the
// client's secret and redirect URI, and ends sessions at its
// end_session_endpoint.
type provider struct {
	srv          *httptest.Server
	users        *users
	store        *providerStorage
	clientID     string
	clientSecret string
}

// password is every test user's.
const password = "correct horse battery staple"

// startProvider runs a provider whose one client is the console at
// consoleURL.
func startProvider(t *testing.T, consoleURL string) *provider {
	t.Helper()
	p := &provider{users: &users{byID: map[string]*storage.User{}, groups: map[string][]string{}},
		clientID: "countersign-console", clientSecret: randomToken()}
	client := storage.WebClient(p.clientID, p.clientSecret, consoleURL+Prefix+"/callback")
	p.store = &providerStorage{
		Storage:    storage.NewStorageWithClients(p.users, map[string]*storage.Client{p.clientID: client}),
		users:      p.users,
		postLogout: []string{consoleURL + Prefix + "/"},
		terminated: map[string]int{},
		consoleID:  p.clientID,
	}
	p.srv = httptest.NewUnstartedServer(nil)
	issuer := "http://" + p.srv.Listener.Addr().String()
	p.srv.Config.Handler = exampleop.SetupServer(issuer, p.store, nil, false)
	p.srv.Start()
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) issuer() string { return p.srv.URL }

// add makes a person the provider knows, signing in with their email and
// password; the ID token lists groups in its groups claim.
func (p *provider) add(email string, groups ...string) {
	p.users.mu.Lock()
	defer p.users.mu.Unlock()
	id := "sub-" + strings.ToLower(email)
	p.users.byID[id] = &storage.User{ID: id, Username: email, Password: password, Email: email, EmailVerified: true,
		FirstName: "Test", LastName: email}
	p.users.groups[id] = groups
}

// terminations counts the sessions of subject the provider was asked to end.
func (p *provider) terminations(subject string) int {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.store.terminated[subject]
}

// users is the provider's user store (storage.UserStore).
type users struct {
	mu     sync.Mutex
	byID   map[string]*storage.User
	groups map[string][]string
}

func (u *users) GetUserByID(id string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.byID[id]
}

func (u *users) GetUserByUsername(name string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, user := range u.byID {
		if strings.EqualFold(user.Username, name) {
			return user
		}
	}
	return nil
}

func (u *users) ExampleClientID() string { return storage.ServiceUserID }

func (u *users) groupsOf(id string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.groups[id]
}

// providerStorage is the example storage with what the console needs of
// a provider: the email and groups in the ID token (as Okta, Entra ID and
// Keycloak can be set to), the console's sign-out return address
// registered, and a record of the sessions ended.
type providerStorage struct {
	*storage.Storage
	users      *users
	postLogout []string
	consoleID  string

	mu         sync.Mutex
	terminated map[string]int
}

func (s *providerStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil || id != s.consoleID {
		return c, err
	}
	return consoleClient{Client: c, postLogout: s.postLogout}, nil
}

func (s *providerStorage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	if groups := s.users.groupsOf(req.GetSubject()); len(groups) > 0 {
		info.AppendClaims("groups", groups)
	}
	return nil
}

func (s *providerStorage) TerminateSession(ctx context.Context, userID, clientID string) error {
	s.mu.Lock()
	s.terminated[userID]++
	s.mu.Unlock()
	return s.Storage.TerminateSession(ctx, userID, clientID)
}

// consoleClient is the console's registration: the user's claims go in
// the ID token, and the console's queue is a sign-out return address.
type consoleClient struct {
	op.Client
	postLogout []string
}

func (c consoleClient) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c consoleClient) PostLogoutRedirectURIs() []string     { return c.postLogout }
