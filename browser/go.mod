module github.com/revkv/revkv/browser

go 1.26.0

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/revkv/revkv v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/btree v1.1.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/revkv/revkv => ../
