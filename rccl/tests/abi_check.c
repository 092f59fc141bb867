// SPDX-License-Identifier: MIT
/* Compiles rccl/include/odl_nccl_net.h (its _Static_asserts pin every size
 * and offset of shared/ref/net-plugin.md section 2.5) and prints the sizes. */
#include <stdio.h>

#include "odl_nccl_net.h"
#include "odl_tb5_rccl_stats.h"

int main(void)
{
	printf("abi: properties v7 %zu v8 %zu v9 %zu v10 %zu v11 %zu v12 %zu; tables v7 %zu v8 %zu "
	       "v9 %zu v10 %zu v11 %zu v12 %zu; "
	       "device handle %zu; stats %zu\n",
	       sizeof(ncclNetProperties_v7_t), sizeof(ncclNetProperties_v8_t),
	       sizeof(ncclNetProperties_v9_t), sizeof(ncclNetProperties_v10_t),
	       sizeof(ncclNetProperties_v11_t), sizeof(ncclNetProperties_v12_t), sizeof(ncclNet_v7_t),
	       sizeof(ncclNet_v8_t), sizeof(ncclNet_v9_t), sizeof(ncclNet_v10_t), sizeof(ncclNet_v11_t),
	       sizeof(ncclNet_v12_t),
	       sizeof(ncclNetDeviceHandle_v7_t), sizeof(struct odl_tb5_rccl_stats));
	return 0;
}
