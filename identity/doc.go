// Package identity parses and prints the ids of the people countersign
// deals with: the reviewers a tool lists, the person a request is made for,
// the clicker who decides. Each id carries a scheme, the system that
// vouches for it:
//
//	slack:U024BE7LH     a Slack user (U… or W…); slack:S0FINANCE, a user group
//	local:reviewer      a reviewer of the local review inbox
//	teams:<object id>   a Microsoft Teams user, by their Entra ID (AAD) object id
//	email:<address>     a reviewer reached by email
//	oidc:<subject>      a person signed in through OpenID Connect (a subject or an email)
//	oidc:group:<name>   the people whose ID token lists the IdP group <name>
//
// A Slack id may be written bare (U…, W…, and S… for a group), as Slack
// and the configuration have always written it, and is printed bare: the
// API's "by" and the audit keep "U024BE7LH" as before. Every other scheme
// is printed with its name. The rule is written here once, and the
// configuration, the review service, the OpenAPI document and the MCP
// tools' text all take it from here.
//
// It imports the standard library only.
package identity
