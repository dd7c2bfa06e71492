package vet

import (
	"fmt"
	"testing"
)

func TestV(t *testing.T) { fmt.Printf("%d\n", "x") }
