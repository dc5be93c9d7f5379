package diagnose_test

import (
	"os"
	"testing"
)

func TestZZBig(t *testing.T) {
	if os.Getenv("ZZBIG") == "" {
		t.Skip()
	}
	t.Logf("%d compared", CompareHome(t, "/tmp/h-mem-bigcopy"))
}
