package hang

import (
	"testing"
	"time"
)

func TestFast(t *testing.T) {}
func TestHang(t *testing.T) {
	t.Run("inner", func(t *testing.T) { time.Sleep(time.Hour) })
}
