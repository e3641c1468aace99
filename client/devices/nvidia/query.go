package nvidia

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// NVML queries go through call and call0. The real library answers a
// query a GPU or driver does not support with ERROR_NOT_SUPPORTED (or
// ERROR_FUNCTION_NOT_FOUND on an older driver); go-nvml's mocks instead
// panic when a test left that function unset. Both mean "this fact is not
// available", so a panic from a query is turned into
// ERROR_FUNCTION_NOT_FOUND and the fact is left out.

func call[T any](f func() (T, nvml.Return)) (v T, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}()
	return f()
}

func call0(f func() nvml.Return) (ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}()
	return f()
}
