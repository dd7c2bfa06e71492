module example.com/asserts

go 1.22

require (
	github.com/frankban/quicktest v1.14.6
	github.com/stretchr/testify v1.12.1
	gotest.tools/v3 v3.5.2
)

require (
	github.com/google/go-cmp v0.5.9 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/rogpeppe/go-internal v1.9.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
