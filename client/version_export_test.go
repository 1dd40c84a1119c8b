package client

// VersionIn exposes versionIn, to test it on the build information of a
// program that depends on the client.
var VersionIn = versionIn
