/* SPDX-License-Identifier: MIT */
/* The reference model's storage and ordering; see model.h. */
#include <stdlib.h>
#include <string.h>

#include "model.h"

void model_init(struct model *m, int ndev)
{
	memset(m, 0, sizeof(*m));
	m->ndev = ndev;
	for (int i = 0; i < N_RAW; i++)
		m->raw[i] = -1;
	for (int i = 0; i < N_HB; i++)
		m->hb[i] = model_new_store(m, -1, 0, HB_SIZE);
}

void model_fini(struct model *m)
{
	for (int i = 0; i < m->nst; i++) {
		free(m->st[i].bytes);
		free(m->st[i].def);
	}
	free(m->pend);
}

int model_new_store(struct model *m, int kind, int dev, size_t size)
{
	struct store *s;

	if (m->nst == MAX_STORE)
		return -1;
	s = &m->st[m->nst];
	memset(s, 0, sizeof(*s));
	s->live = 1;
	s->kind = kind;
	s->dev = dev;
	s->size = size;
	/* new memory holds nothing known */
	s->bytes = calloc(size ? size : 1, 1);
	s->def = calloc(size ? size : 1, 1);
	return m->nst++;
}

void model_free_store(struct model *m, int st)
{
	m->st[st].live = 0;
}

static void prune(struct model *m)
{
	int j = 0;

	for (int i = 0; i < m->npend; i++) {
		struct pending *p = &m->pend[i];

		if (m->host[p->sid] < p->seq && m->st[p->store].live)
			m->pend[j++] = *p;
	}
	m->npend = j;
}

void model_sync_clock(struct model *m, const int *vc)
{
	for (int i = 0; i < m->nsid; i++)
		if (vc[i] > m->host[i])
			m->host[i] = vc[i];
}

void model_sync_stream(struct model *m, int sid)
{
	model_sync_clock(m, m->vc[sid]);
	m->host[sid] = m->n[sid];
}

void model_sync_device(struct model *m, int dev)
{
	for (int i = 0; i < m->nsid; i++)
		if (dev < 0 || m->sid_dev[i] == dev)
			model_sync_stream(m, i);
}

int model_stream_done(const struct model *m, int sid)
{
	if (m->host[sid] < m->n[sid])
		return 0;
	for (int i = 0; i < m->nsid; i++)
		if (m->host[i] < m->vc[sid][i])
			return 0;
	return 1;
}

int model_event_done(const struct model *m, const struct mevent *e)
{
	if (!e->recorded)
		return 1;
	for (int i = 0; i < m->nsid; i++)
		if (m->host[i] < e->vc[i])
			return 0;
	return 1;
}

void model_undefine(struct model *m, int st, size_t off, size_t len)
{
	if (st < 0 || off >= m->st[st].size)
		return;
	if (len > m->st[st].size - off)
		len = m->st[st].size - off;
	memset(m->st[st].def + off, 0, len);
}

static int ordered(const struct model *m, const struct pending *p, int sid)
{
	if (m->host[p->sid] >= p->seq)
		return 1;
	return sid >= 0 && (sid == p->sid || m->vc[sid][p->sid] >= p->seq);
}

int model_access(struct model *m, int st, int sid, int write,
		 int dst, size_t dst_off, size_t dst_len)
{
	int conflict = 0;

	prune(m);
	for (int i = 0; i < m->npend; i++) {
		struct pending *p = &m->pend[i];

		if (p->store != st || !(write || p->write) || ordered(m, p, sid))
			continue;
		conflict = 1;
		model_undefine(m, p->dst, p->dst_off, p->dst_len);
		model_undefine(m, dst, dst_off, dst_len);
		if (m->nlate < (int)(sizeof(m->late) / sizeof(m->late[0])))
			m->late[m->nlate++] = (typeof(m->late[0])){
				dst, dst_off, dst_len };
	}
	if (sid < 0)
		return conflict;
	if (m->npend == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->pend = realloc(m->pend, m->cap * sizeof(*m->pend));
	}
	m->pend[m->npend++] = (struct pending){
		.store = st, .sid = sid, .seq = m->n[sid] + 1, .write = write,
		.dst = dst, .dst_off = dst_off, .dst_len = dst_len };
	return conflict;
}

void model_op_begin(struct model *m)
{
	m->nlate = 0;
}

/* the current op's conflicting writes stay undefined after it writes */
static void undefine_late(struct model *m)
{
	for (int i = 0; i < m->nlate; i++)
		model_undefine(m, m->late[i].st, m->late[i].off,
			       m->late[i].len);
}

void model_queue(struct model *m, int sid)
{
	m->n[sid]++;
}

void model_write(struct model *m, int st, size_t off, const uint8_t *src,
		 size_t len)
{
	memcpy(m->st[st].bytes + off, src, len);
	memset(m->st[st].def + off, 1, len);
	undefine_late(m);
}

void model_copy(struct model *m, int dst, size_t doff, int src, size_t soff,
		size_t len)
{
	memmove(m->st[dst].bytes + doff, m->st[src].bytes + soff, len);
	memmove(m->st[dst].def + doff, m->st[src].def + soff, len);
	undefine_late(m);
}

long model_compare(const struct model *m, int st, size_t off,
		   const uint8_t *got, size_t len)
{
	const struct store *s = &m->st[st];

	for (size_t i = 0; i < len; i++)
		if (s->def[off + i] && s->bytes[off + i] != got[i])
			return (long)i;
	return -1;
}
