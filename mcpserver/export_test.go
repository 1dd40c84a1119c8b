package mcpserver

// InputSchema exposes the typed tools' schema wrapping to the tests.
var InputSchema = inputSchema

// TypedToolName exposes the typed tools' naming to the tests.
var TypedToolName = typedToolName
