module gofixture

go 1.19
