package gateway

import "os/exec"

var execLookPath = exec.LookPath
