package proxy

import "os"

func osEnviron() []string { return os.Environ() }
