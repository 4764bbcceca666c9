// SPDX-License-Identifier: MIT
/*
 * The PCI view, through libpci: address, names, link, BARs, and which
 * kernel driver is bound.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pci/pci.h>

#include "../../include/accel_hw.h"
#include "accel_smi.h"

static const char *speed_name(unsigned int code)
{
	static const char *const names[] = { "", "2.5GT/s", "5GT/s", "8GT/s",
					     "16GT/s", "32GT/s", "64GT/s" };

	return code < sizeof(names) / sizeof(names[0]) ? names[code] : "";
}

/* Link status and capability from the PCI Express capability. */
static void read_link(struct pci_dev *d, struct smi_dev *out)
{
	struct pci_cap *cap = pci_find_cap(d, PCI_CAP_ID_EXP, PCI_CAP_NORMAL);
	unsigned int sta, lcap;

	if (!cap)
		return;
	sta = pci_read_word(d, cap->addr + PCI_EXP_LNKSTA);
	lcap = pci_read_long(d, cap->addr + PCI_EXP_LNKCAP);
	snprintf(out->link_speed, sizeof(out->link_speed), "%s",
		 speed_name(sta & PCI_EXP_LNKSTA_SPEED));
	out->link_width = (sta & PCI_EXP_LNKSTA_WIDTH) >> 4;
	snprintf(out->link_max_speed, sizeof(out->link_max_speed), "%s",
		 speed_name(lcap & PCI_EXP_LNKCAP_SPEED));
	out->link_max_width = (lcap & PCI_EXP_LNKCAP_WIDTH) >> 4;
}

static void read_bars(struct pci_dev *d, struct smi_dev *out)
{
	for (int i = 0; i < 6; i++) {
		pciaddr_t base = d->base_addr[i];
		struct smi_bar *b;

		if (!d->size[i])
			continue;
		b = &out->bars[out->nbars++];
		b->index = i;
		b->io = base & PCI_BASE_ADDRESS_SPACE_IO;
		b->addr = base & (b->io ? PCI_BASE_ADDRESS_IO_MASK :
					  PCI_BASE_ADDRESS_MEM_MASK);
		b->is64 = !b->io && (base & PCI_BASE_ADDRESS_MEM_TYPE_MASK) ==
				    PCI_BASE_ADDRESS_MEM_TYPE_64;
		b->prefetchable = !b->io && (base & PCI_BASE_ADDRESS_MEM_PREFETCH);
		b->size = d->size[i];
		if (b->is64)
			i++;	/* the upper half of this BAR */
	}
}

/* The driver bound to the device, from its sysfs "driver" link. */
static void read_driver(struct smi_dev *out)
{
	char link[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s/driver", out->bdf);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = '\0';
	snprintf(out->driver, sizeof(out->driver), "%s", basename(target));
}

static void describe(struct pci_access *pacc, struct pci_dev *d,
		     struct smi_dev *out)
{
	memset(out, 0, sizeof(*out));
	out->on_pci = true;
	snprintf(out->bdf, sizeof(out->bdf), "%04x:%02x:%02x.%d", d->domain,
		 d->bus, d->dev, d->func);
	out->vendor = d->vendor_id;
	out->device = d->device_id;
	out->subvendor = pci_read_word(d, PCI_SUBSYSTEM_VENDOR_ID);
	out->subdevice = pci_read_word(d, PCI_SUBSYSTEM_ID);
	out->revision = pci_read_byte(d, PCI_REVISION_ID);
	pci_lookup_name(pacc, out->vendor_name, sizeof(out->vendor_name),
			PCI_LOOKUP_VENDOR, d->vendor_id);
	pci_lookup_name(pacc, out->device_name, sizeof(out->device_name),
			PCI_LOOKUP_DEVICE, d->vendor_id, d->device_id);
	read_link(d, out);
	read_bars(d, out);
	read_driver(out);
}

bool smi_scan_pci(struct smi_state *s, char *why, int why_len)
{
	struct pci_access *pacc = pci_alloc();

	if (!pacc) {
		snprintf(why, (size_t)why_len, "libpci cannot start");
		return false;
	}
	pci_init(pacc);
	pci_scan_bus(pacc);
	for (struct pci_dev *d = pacc->devices; d; d = d->next) {
		pci_fill_info(d, PCI_FILL_IDENT | PCI_FILL_BASES |
				 PCI_FILL_SIZES | PCI_FILL_CAPS);
		if (d->vendor_id != ACCEL_PCI_VENDOR_ID ||
		    d->device_id != ACCEL_PCI_DEVICE_ID)
			continue;
		if (s->ndevs == SMI_MAX_DEVICES)
			break;
		describe(pacc, d, &s->devs[s->ndevs++]);
	}
	pci_cleanup(pacc);
	return true;
}
