package core

import (
	"reflect"
	"testing"
	"unsafe"
)

func pad(t *testing.T, v any) {
	ty := reflect.TypeOf(v)
	var end uintptr
	total := uintptr(0)
	for i := 0; i < ty.NumField(); i++ {
		f := ty.Field(i)
		if f.Offset > end {
			t.Logf("%s: %d bytes pad before %s", ty.Name(), f.Offset-end, f.Name)
			total += f.Offset - end
		}
		end = f.Offset + f.Type.Size()
	}
	if ty.Size() > end {
		total += ty.Size() - end
		t.Logf("%s: %d tail pad", ty.Name(), ty.Size()-end)
	}
	t.Logf("%s size %d pad %d", ty.Name(), ty.Size(), total)
}

func TestZZSizes(t *testing.T) {
	t.Logf("Conn %d connBody %d sender %d receiver %d multipath %d sendMsg %d recvMsg %d handshake %d ConnStats %d liveness %d grant %d",
		unsafe.Sizeof(Conn{}), unsafe.Sizeof(connBody{}), unsafe.Sizeof(sender{}), unsafe.Sizeof(receiver{}), unsafe.Sizeof(multipath{}),
		unsafe.Sizeof(sendMsg{}), unsafe.Sizeof(recvMsg{}), unsafe.Sizeof(handshake{}), unsafe.Sizeof(ConnStats{}), unsafe.Sizeof(liveness{}), unsafe.Sizeof(grant{}))
	for _, v := range []any{connBody{}, sender{}, receiver{}, liveness{}, multipath{}, sendChrono{}, silence{}, recvActive{}, sendActive{}, Conn{}} {
		pad(t, v)
	}
}
