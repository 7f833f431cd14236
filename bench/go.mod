module github.com/revkv/revkv/bench

go 1.26

require github.com/revkv/revkv v0.0.0

require github.com/google/btree v1.1.3 // indirect

replace github.com/revkv/revkv => ../
