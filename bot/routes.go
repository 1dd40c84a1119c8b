package bot

// The HTTP routes the Slack surface serves; manifest.yml points Slack at them.
const (
	InteractionsPath = "/slack/interactions"
	CommandsPath     = "/slack/commands"
	SlashCommand     = "/countersign"
)

// MethodScopes maps every Slack Web API method the bot calls to the bot
// scope it needs; manifest.yml must request exactly these and "commands".
var MethodScopes = map[string][]string{
	"chat.postMessage":      {"chat:write"},
	"chat.update":           {"chat:write"},
	"chat.delete":           {"chat:write"},
	"chat.postEphemeral":    {"chat:write"},
	"conversations.history": {"channels:history", "groups:history"},
	"usergroups.users.list": {"usergroups:read"},
}
