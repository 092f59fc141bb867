/*
 * OdinLink "usb4-nhi": a USB4 host interface (NHI) PCI function with its
 * host router, joined to another instance by a simulated cable.
 *
 * This file is QEMU glue only: PCI identity and capabilities, BAR0,
 * MSI-X/MSI, DMA through pci_dma_* (so a vIOMMU applies), timers on the
 * virtual clock and the cable chardev. The device itself is the
 * QEMU-independent model core in hw-model/core.
 *
 * Properties:
 *   cable=<chardev>   UNIX socket to the cable program (sim/cable)
 *   profile=<name|path.profile>  controller profile (default "generic")
 *   uid=<u64>         host router UID (default: random, non-zero)
 *   trace=on|off      log every register access and packet to stderr
 *   fault=<text>      run-time fault hooks of the core, also settable on a
 *                     running device: qom-set <path> fault "drop-irq rx=1
 *                     nth=3" (see docs/profiles.md, "Fault hooks")
 *   stats             (read-only) the core's counters, "key=value ..."
 *   rings             (read-only) the rings' run-time state, a line each
 *                     (indices, E2E credits, held frames; nhi_rings_describe)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/timer.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "chardev/char-fe.h"
#include "migration/vmstate.h"
#include "qom/object.h"

#include "usb4_nhi.h"

#define TYPE_USB4_NHI "usb4-nhi"
OBJECT_DECLARE_SIMPLE_TYPE(USB4NHIState, USB4_NHI)

#define PM_CAP_PMC_PME_D0     (1u << 11)
#define PM_CAP_PMC_PME_D3HOT  (1u << 14)
#define PM_CSR_STATE_MASK     0x3u
#define PM_CSR_NO_SOFT_RESET  (1u << 3)
#define PM_CSR_PME_EN         (1u << 8)
#define PM_CSR_PME_STATUS     (1u << 15)

typedef struct USB4NHITimer {
    struct USB4NHIState *s;
    int id;
    QEMUTimer *timer;
} USB4NHITimer;

struct USB4NHIState {
    PCIDevice parent_obj;

    MemoryRegion bar0;
    CharBackend cable;
    QEMUBH *bh;
    GByteArray *txbatch;      /* cable output gathered during the BH */
    bool batching;
    USB4NHITimer timers[NHI_TIMER_COUNT];
    struct nhi *core;
    struct nhi_profile profile;
    uint8_t pm_cap;

    char *profile_name;
    uint64_t uid;
    bool trace;
    char *fault;              /* last fault command (applied at realize) */
};

/* ---- host services for the core ---- */

static int nhi_q_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    USB4NHIState *s = opaque;

    return pci_dma_read(PCI_DEVICE(s), addr, buf, len) != MEMTX_OK;
}

static int nhi_q_dma_write(void *opaque, uint64_t addr, const void *buf,
                           size_t len)
{
    USB4NHIState *s = opaque;

    return pci_dma_write(PCI_DEVICE(s), addr, buf, len) != MEMTX_OK;
}

static void nhi_q_msix(void *opaque, unsigned int vector)
{
    PCIDevice *pdev = PCI_DEVICE(opaque);

    if (msix_enabled(pdev)) {
        if (vector < NHI_MSIX_VECTORS) {
            msix_notify(pdev, vector);
        }
    } else if (msi_enabled(pdev)) {
        msi_notify(pdev, 0);
    }
}

static void nhi_q_wake(void *opaque)
{
    USB4NHIState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    uint16_t csr;

    if (!s->pm_cap) {
        return;
    }
    csr = pci_get_word(pdev->config + s->pm_cap + PCI_PM_CTRL);
    if ((csr & PM_CSR_STATE_MASK) != 0 && (csr & PM_CSR_PME_EN) &&
        !(csr & PM_CSR_PME_STATUS)) {
        pci_set_word(pdev->config + s->pm_cap + PCI_PM_CTRL,
                     csr | PM_CSR_PME_STATUS);
    }
}

static void nhi_q_timer_arm(void *opaque, int timer, int64_t deadline)
{
    USB4NHIState *s = opaque;

    if (timer < 0 || timer >= NHI_TIMER_COUNT) {
        return;
    }
    if (deadline < 0) {
        timer_del(s->timers[timer].timer);
    } else {
        timer_mod(s->timers[timer].timer, deadline);
    }
}

static int64_t nhi_q_now(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void nhi_q_cable_tx(void *opaque, const void *msg, size_t len)
{
    USB4NHIState *s = opaque;

    if (!qemu_chr_fe_backend_connected(&s->cable)) {
        return;
    }
    if (s->batching) {
        g_byte_array_append(s->txbatch, msg, len);
    } else {
        qemu_chr_fe_write_all(&s->cable, msg, len);
    }
}

/* Doorbells of data rings are processed here, off the vCPU thread, and
 * their cable output leaves in one write. */
static void nhi_q_bh(void *opaque)
{
    USB4NHIState *s = opaque;

    s->batching = true;
    nhi_run_deferred(s->core);
    s->batching = false;
    if (s->txbatch->len) {
        qemu_chr_fe_write_all(&s->cable, s->txbatch->data, s->txbatch->len);
        g_byte_array_set_size(s->txbatch, 0);
    }
}

static void nhi_q_defer(void *opaque)
{
    USB4NHIState *s = opaque;

    qemu_bh_schedule(s->bh);
}

static void nhi_q_log(void *opaque, int level, const char *msg)
{
    USB4NHIState *s = opaque;

    if (level == NHI_LOG_ERROR) {
        qemu_log_mask(LOG_GUEST_ERROR, "usb4-nhi[%016" PRIx64 "]: %s\n",
                      s->uid, msg);
    }
    fprintf(stderr, "usb4-nhi[%016" PRIx64 "] %" PRId64 ": %s\n", s->uid,
            qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) / 1000, msg);
}

static const struct nhi_host_ops nhi_q_ops = {
    .dma_read = nhi_q_dma_read,
    .dma_write = nhi_q_dma_write,
    .msix = nhi_q_msix,
    .wake = nhi_q_wake,
    .timer_arm = nhi_q_timer_arm,
    .now = nhi_q_now,
    .cable_tx = nhi_q_cable_tx,
    .log = nhi_q_log,
    .defer = nhi_q_defer,
};

static void nhi_q_timer_cb(void *opaque)
{
    USB4NHITimer *t = opaque;

    nhi_timer_fire(t->s->core, t->id);
}

/* ---- BAR0 ---- */

static uint64_t nhi_q_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    USB4NHIState *s = opaque;

    return nhi_mmio_read(s->core, addr);
}

static void nhi_q_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    USB4NHIState *s = opaque;

    nhi_mmio_write(s->core, addr, val);
}

static const MemoryRegionOps nhi_q_mmio_ops = {
    .read = nhi_q_mmio_read,
    .write = nhi_q_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

/* ---- cable ---- */

static int nhi_q_can_receive(void *opaque)
{
    return 64 * KiB;
}

static void nhi_q_receive(void *opaque, const uint8_t *buf, int size)
{
    USB4NHIState *s = opaque;

    nhi_cable_rx(s->core, buf, size);
}

static void nhi_q_event(void *opaque, QEMUChrEvent event)
{
    USB4NHIState *s = opaque;

    if (event == CHR_EVENT_OPENED) {
        nhi_cable_connected(s->core, true);
    } else if (event == CHR_EVENT_CLOSED) {
        nhi_cable_connected(s->core, false);
    }
}

/* ---- profile ---- */

static bool nhi_q_load_profile(USB4NHIState *s, Error **errp)
{
    const char *name = s->profile_name ? s->profile_name : "generic";
    char err[256];

    if (strchr(name, '/')) {
        g_autofree char *text = NULL;
        GError *gerr = NULL;

        /* a file: start from the generic profile, override its keys */
        if (nhi_profile_lookup("generic", &s->profile)) {
            error_setg(errp, "usb4-nhi: built-in generic profile missing");
            return false;
        }
        if (!g_file_get_contents(name, &text, NULL, &gerr)) {
            error_setg(errp, "usb4-nhi: cannot read profile %s: %s", name,
                       gerr->message);
            g_error_free(gerr);
            return false;
        }
        if (nhi_profile_parse(text, &s->profile, err, sizeof(err))) {
            error_setg(errp, "usb4-nhi: %s: %s", name, err);
            return false;
        }
    } else if (nhi_profile_lookup(name, &s->profile)) {
        error_setg(errp, "usb4-nhi: unknown profile '%s'", name);
        return false;
    }
    if (nhi_profile_validate(&s->profile, err, sizeof(err))) {
        error_setg(errp, "usb4-nhi: %s", err);
        return false;
    }
    return true;
}

/* ---- fault hooks and counters (QOM, reachable with qom-set/qom-get) ---- */

static char *nhi_q_get_fault(Object *obj, Error **errp)
{
    USB4NHIState *s = USB4_NHI(obj);

    return g_strdup(s->fault ? s->fault : "");
}

static void nhi_q_set_fault(Object *obj, const char *value, Error **errp)
{
    USB4NHIState *s = USB4_NHI(obj);
    char err[256];

    if (s->core && nhi_fault_parse(s->core, value, err, sizeof(err))) {
        error_setg(errp, "usb4-nhi: fault: %s", err);
        return;
    }
    g_free(s->fault);
    s->fault = g_strdup(value);
}

static char *nhi_q_get_stats(Object *obj, Error **errp)
{
    USB4NHIState *s = USB4_NHI(obj);
    const struct nhi_stats *st;

    if (!s->core) {
        return g_strdup("");
    }
    st = nhi_get_stats(s->core);
    return g_strdup_printf(
        "tx_frames=%" PRIu64 " rx_frames=%" PRIu64 " interrupts=%" PRIu64
        " rx_dropped=%" PRIu64 " tx_dropped=%" PRIu64
        " irq_dropped=%" PRIu64 " compl_delayed=%" PRIu64
        " e2e_credits_dropped=%" PRIu64 " e2e_wedged=%" PRIu64
        " e2e_rx_lost=%" PRIu64 " tx_paced=%" PRIu64
        " lowpower_bursts=%" PRIu64 " host_resets=%" PRIu64
        " rx_overflow=%" PRIu64 " credit_syncs=%" PRIu64
        " credit_syncs_rcvd=%" PRIu64 " credits_unfunded=%" PRIu64
        " path_refused=%" PRIu64,
        st->tx_frames, st->rx_frames, st->interrupts, st->rx_dropped,
        st->tx_dropped, st->irq_dropped, st->compl_delayed,
        st->e2e_credits_dropped, st->e2e_wedged, st->e2e_rx_lost,
        st->tx_paced, st->lowpower_bursts, st->host_resets,
        st->rx_overflow, st->credit_syncs, st->credit_syncs_rcvd,
        st->credits_unfunded, st->path_refused);
}

static char *nhi_q_get_rings(Object *obj, Error **errp)
{
    USB4NHIState *s = USB4_NHI(obj);
    char *buf;

    if (!s->core) {
        return g_strdup("");
    }
    buf = g_malloc(16384);
    nhi_rings_describe(s->core, buf, 16384);
    return buf;
}

static void usb4_nhi_instance_init(Object *obj)
{
    object_property_add_str(obj, "fault", nhi_q_get_fault, nhi_q_set_fault);
    object_property_add_str(obj, "stats", nhi_q_get_stats, NULL);
    object_property_add_str(obj, "rings", nhi_q_get_rings, NULL);
}

/* ---- PCI ---- */

static void usb4_nhi_realize(PCIDevice *pdev, Error **errp)
{
    USB4NHIState *s = USB4_NHI(pdev);
    const struct nhi_profile *p = &s->profile;
    struct nhi_config cfg;
    char err[256];
    int off;

    if (!nhi_q_load_profile(s, errp)) {
        return;
    }
    while (s->uid == 0) {
        s->uid = (uint64_t)g_random_int() << 32 | g_random_int();
    }

    pci_config_set_vendor_id(pdev->config, p->pci_vendor);
    pci_config_set_device_id(pdev->config, p->pci_device);
    pci_config_set_revision(pdev->config, p->pci_revision);
    pci_config_set_class(pdev->config, p->pci_class >> 8);
    pdev->config[PCI_CLASS_PROG] = p->pci_class & 0xff;
    pci_set_word(pdev->config + PCI_SUBSYSTEM_VENDOR_ID, p->pci_subsys_vendor);
    pci_set_word(pdev->config + PCI_SUBSYSTEM_ID, p->pci_subsys_device);

    memory_region_init_io(&s->bar0, OBJECT(s), &nhi_q_mmio_ops, s,
                          "usb4-nhi-bar0", NHI_BAR0_SIZE);
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar0);

    /* power management: D3hot with PME, so a plug can wake the domain */
    off = pci_add_capability(pdev, PCI_CAP_ID_PM, 0, PCI_PM_SIZEOF, errp);
    if (off < 0) {
        return;
    }
    s->pm_cap = off;
    pci_set_word(pdev->config + off + PCI_PM_PMC,
                 3 | PM_CAP_PMC_PME_D0 | PM_CAP_PMC_PME_D3HOT);
    pci_set_word(pdev->config + off + PCI_PM_CTRL, PM_CSR_NO_SOFT_RESET);
    pci_set_word(pdev->wmask + off + PCI_PM_CTRL,
                 PM_CSR_STATE_MASK | PM_CSR_PME_EN);
    pci_set_word(pdev->w1cmask + off + PCI_PM_CTRL, PM_CSR_PME_STATUS);

    if (msi_init(pdev, 0, 1, true, false, errp)) {
        return;
    }
    if (msix_init_exclusive_bar(pdev, NHI_MSIX_VECTORS, 2, errp)) {
        msi_uninit(pdev);
        return;
    }
    for (unsigned int i = 0; i < NHI_MSIX_VECTORS; i++) {
        msix_vector_use(pdev, i);
    }

    for (int i = 0; i < NHI_TIMER_COUNT; i++) {
        s->timers[i].s = s;
        s->timers[i].id = i;
        s->timers[i].timer = timer_new_ns(QEMU_CLOCK_VIRTUAL,
                                          nhi_q_timer_cb, &s->timers[i]);
    }

    s->bh = qemu_bh_new(nhi_q_bh, s);
    s->txbatch = g_byte_array_new();

    memset(&cfg, 0, sizeof(cfg));
    cfg.profile = s->profile;
    cfg.uid = s->uid;
    cfg.trace = s->trace;
    s->core = nhi_new(&cfg, &nhi_q_ops, s, err, sizeof(err));
    if (!s->core) {
        error_setg(errp, "usb4-nhi: %s", err);
        return;
    }

    if (s->fault && nhi_fault_parse(s->core, s->fault, err, sizeof(err))) {
        error_setg(errp, "usb4-nhi: fault: %s", err);
        nhi_free(s->core);
        s->core = NULL;
        return;
    }

    if (qemu_chr_fe_backend_connected(&s->cable)) {
        qemu_chr_fe_set_handlers(&s->cable, nhi_q_can_receive, nhi_q_receive,
                                 nhi_q_event, NULL, s, NULL, true);
    }
}

static void usb4_nhi_exit(PCIDevice *pdev)
{
    USB4NHIState *s = USB4_NHI(pdev);

    qemu_chr_fe_deinit(&s->cable, false);
    for (int i = 0; i < NHI_TIMER_COUNT; i++) {
        if (s->timers[i].timer) {
            timer_free(s->timers[i].timer);
            s->timers[i].timer = NULL;
        }
    }
    nhi_free(s->core);
    s->core = NULL;
    g_free(s->fault);
    s->fault = NULL;
    if (s->bh) {
        qemu_bh_delete(s->bh);
        s->bh = NULL;
    }
    if (s->txbatch) {
        g_byte_array_free(s->txbatch, true);
        s->txbatch = NULL;
    }
    msix_uninit_exclusive_bar(pdev);
    msi_uninit(pdev);
}

static void usb4_nhi_reset(DeviceState *dev)
{
    USB4NHIState *s = USB4_NHI(dev);
    PCIDevice *pdev = PCI_DEVICE(dev);

    if (s->core) {
        nhi_reset(s->core);
    }
    if (s->pm_cap) {
        pci_set_word(pdev->config + s->pm_cap + PCI_PM_CTRL,
                     PM_CSR_NO_SOFT_RESET);
    }
}

static Property usb4_nhi_properties[] = {
    DEFINE_PROP_CHR("cable", USB4NHIState, cable),
    DEFINE_PROP_STRING("profile", USB4NHIState, profile_name),
    DEFINE_PROP_UINT64("uid", USB4NHIState, uid, 0),
    DEFINE_PROP_BOOL("trace", USB4NHIState, trace, false),
    DEFINE_PROP_END_OF_LIST(),
};

static const VMStateDescription usb4_nhi_vmstate = {
    .name = TYPE_USB4_NHI,
    .unmigratable = 1,
};

static void usb4_nhi_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = usb4_nhi_realize;
    k->exit = usb4_nhi_exit;
    k->vendor_id = 0x1234;
    k->device_id = 0x0b45;
    k->revision = 1;
    k->class_id = 0x0c03;
    dc->reset = usb4_nhi_reset;
    dc->vmsd = &usb4_nhi_vmstate;
    dc->desc = "OdinLink USB4 host interface (NHI) with host router";
    device_class_set_props(dc, usb4_nhi_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo usb4_nhi_info = {
    .name = TYPE_USB4_NHI,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(USB4NHIState),
    .instance_init = usb4_nhi_instance_init,
    .class_init = usb4_nhi_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void usb4_nhi_register_types(void)
{
    type_register_static(&usb4_nhi_info);
}

type_init(usb4_nhi_register_types)
