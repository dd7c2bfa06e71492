package patch

import (
	"context"
	"fmt"
	"os"
	"testing"
)

func TestOne(t *testing.T) {
	b, _ := os.ReadFile("/tmp/dump/p.diff")
	os.RemoveAll("/tmp/dump/work")
	os.CopyFS("/tmp/dump/work", os.DirFS("/tmp/dump/tree"))
	res, err := Apply(context.Background(), "/tmp/dump/work", b, Options{Strip: DetectStrip, NoBackup: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range res.Hunks {
		fmt.Printf("%+v\n", h)
	}
	fmt.Println(res.Messages)
}
