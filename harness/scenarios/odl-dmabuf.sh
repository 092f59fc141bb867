#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-dmabuf: DMA-buf import path. Both guests load the test exporter
# (tests/dmabuf_exporter); a's SEND source and b's RECV target are imported
# DMA-bufs (filled/checked through their own mmap); every byte verified.
# Then the other kind of handle (ABI 1.4): each side's own heap memory,
# at an odd offset, pinned with MEM_REG, both ways, every byte verified.
# On guest kernels that have them (6.12: Debian 13 builds CONFIG_UDMABUF
# and CONFIG_DMABUF_HEAPS_SYSTEM in; 6.1 has neither) also DMA-bufs of the
# kernel's own exporters: udmabuf (memfd pages) and the DMA-BUF system heap
# (the exporter of camera and media stacks), one each way.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/odl-lib.sh"
tap_timeout 900
odl_need_build
EXP_KO=$ODL_BUILD_DRIVER/odl_dmabuf_exp.ko
[ -f "$EXP_KO" ] || bail_out "build/driver/odl_dmabuf_exp.ko missing: run 'make driver'"
pair_up
stock=0
kernel_at_least a 6 12 && stock=1
tap_plan $((7 + stock * 4))
for v in a b; do
	odl_put $v && "$VMPAIR" put $v "$EXP_KO" /tmp/odl_dmabuf_exp.ko >/dev/null &&
		odl_load $v || bail_out "cannot load odl_tb5 on $v"
	check "$v: exporter loads" vm $v insmod /tmp/odl_dmabuf_exp.ko
done
odl_wait_connected a 90 && odl_wait_connected b 90 || bail_out "no login"
vm b sh -c "setsid /tmp/odl_xfer recv -D -p 2 -q 1 -n 24 -s 1,4064,4065,65536,1048576,3000000 > /tmp/rx.dma 2>&1 < /dev/null &"
wait_for "vm b grep -q ready /tmp/rx.dma" 30
out=$(vm a /tmp/odl_xfer send -D -p 1 -q 2 -n 24 -s 1,4064,4065,65536,1048576,3000000 2>&1)
wait_for "vm b grep -q received /tmp/rx.dma" 60
if vm b grep -q ' 0 bad' /tmp/rx.dma; then
	ok "a -> b DMA-buf to DMA-buf, 24 messages verified" "$out" "$(vm b cat /tmp/rx.dma)"
else
	not_ok "a -> b DMA-buf to DMA-buf, 24 messages verified" "$out" "$(vm b cat /tmp/rx.dma)"
fi
check "a -> b registered user memory on both ends (MEM_REG), 24 messages verified" \
	odl_xfer_run a b 3 4 24 1,4064,4065,65536,1048576,3000000 -U
check "b -> a registered user memory on both ends (MEM_REG), 24 messages verified" \
	odl_xfer_run b a 5 6 24 1,4097,65536,2000000 -U
if [ $stock = 1 ]; then
	for v in a b; do
		check "$v: the kernel's exporters are there (/dev/udmabuf, /dev/dma_heap/system)" \
			vm $v test -c /dev/udmabuf -a -c /dev/dma_heap/system
	done
	check "a -> b udmabuf to udmabuf, 24 messages verified" \
		odl_xfer_run a b 7 8 24 1,4064,4065,65536,1048576,3000000 "-D -E udmabuf"
	check "b -> a system heap to system heap, 24 messages verified" \
		odl_xfer_run b a 9 10 24 1,4097,65536,2000000,3000000 "-D -E heap"
fi
odl_check_clean
tap_done
