package approvals

// Conforming is conforming for the external tests of this package.
var Conforming = conforming
