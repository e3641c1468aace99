// Hash links to the pages, with IDs encoded.
import { href } from './router.js';

const nsQuery = (ns) => (ns && ns !== 'default' ? `?namespace=${encodeURIComponent(ns)}` : '');

/** jobHref links a job (a stub or a job) by ID and namespace. */
export const jobHref = (j) => href('jobs', j.ID ?? j.JobID) + nsQuery(j.Namespace);
export const jobIDHref = (id, ns) => href('jobs', id) + nsQuery(ns);
export const allocHref = (id) => href('allocations', id);
export const nodeHref = (id) => href('nodes', id);
