module funclatency.test/goworkload

go 1.19
