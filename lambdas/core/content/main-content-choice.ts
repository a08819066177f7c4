/**
 * Choosing the content, the second stage of main-content extraction (main-content.ts), as
 * Readability.js does: a landmark holding half the page's text wins outright; else the best scored
 * candidate (scores counted by main-content-tree.ts) moves up to an ancestor it shares with other
 * good candidates or that scores better, and its siblings join when they score well or are link-poor
 * paragraphs. Apart from the tree builder because it runs once over the finished tree.
 */
import {
  type El,
  F_SCORED,
  F_UNLIKELY,
  finalScore,
  insideUnlikely,
  K_P,
  K_ROOT,
  linkDensity,
} from './main-content-element.ts';
import type { Parsed } from './main-content-tree.ts';

/** The elements to render: a landmark, the top candidate and its siblings that join it, or the page. */
export function chooseContent(parsed: Parsed): El[] {
  const { root, candidates, landmarks } = parsed;
  const landmark = largestLandmark(landmarks);
  if (landmark !== undefined && landmark.textLen > 0 && landmark.textLen * 2 >= root.textLen)
    return [landmark];

  const best = bestCandidates(candidates);
  if (best.els.length === 0) return [root];
  const top = pastOnlyChildren(climb(sharedAncestor(best)));
  const parent = top.parent;
  if (parent === null || parent.kind === K_ROOT) return [top];
  return withSiblings(top, parent);
}

/** The landmark with the most text, outside unlikely elements (the first of equals). */
function largestLandmark(landmarks: El[]): El | undefined {
  let landmark: El | undefined;
  for (const el of landmarks) {
    if ((landmark === undefined || el.textLen > landmark.textLen) && !insideUnlikely(el)) landmark = el;
  }
  return landmark;
}

interface Best {
  els: El[];
  scores: number[];
}

/** The 5 best candidates, best first. */
function bestCandidates(candidates: El[]): Best {
  const best: El[] = [];
  const bestScores: number[] = [];
  for (const el of candidates) {
    const score = finalScore(el);
    if (best.length === 5 && score <= bestScores[4]!) continue;
    if (insideUnlikely(el)) continue;
    let i = best.length < 5 ? best.length : 4;
    while (i > 0 && bestScores[i - 1]! < score) {
      best[i] = best[i - 1]!;
      bestScores[i] = bestScores[i - 1]!;
      i--;
    }
    best[i] = el;
    bestScores[i] = score;
  }
  return { els: best, scores: bestScores };
}

/**
 * Readability: when 3+ of the other good candidates (75% of the top score) share an ancestor of the
 * top candidate, that ancestor holds the article (its parts are split in sections).
 */
function sharedAncestor(best: Best): El {
  const top = best.els[0]!;
  const topScore = best.scores[0]!;
  const shared = new Map<El, number>();
  for (let i = 1; i < best.els.length; i++) {
    if (best.scores[i]! < topScore * 0.75) continue;
    for (let p = best.els[i]!.parent; p !== null && p.kind !== K_ROOT; p = p.parent) {
      shared.set(p, (shared.get(p) ?? 0) + 1);
    }
  }
  if (shared.size > 0) {
    for (let p = top.parent; p !== null && p.kind !== K_ROOT && p.tag !== 'body'; p = p.parent) {
      if ((shared.get(p) ?? 0) >= 3) return p;
    }
  }
  return top;
}

/** Readability: moves up while the parent scores better (not too much lower). */
function climb(from: El): El {
  let lastScore = finalScore(from);
  const threshold = lastScore / 3;
  for (let p = from.parent; p !== null && p.kind !== K_ROOT && p.tag !== 'body'; p = p.parent) {
    if ((p.flags & F_SCORED) === 0) continue;
    const score = finalScore(p);
    if (score < threshold) break;
    if (score > lastScore) return p;
    lastScore = score;
  }
  return from;
}

/** Moves up past ancestors of which `from` is the only element child. */
function pastOnlyChildren(from: El): El {
  let top = from;
  for (let p = top.parent; p !== null && p.kind !== K_ROOT && p.tag !== 'body'; p = p.parent) {
    let elements = 0;
    for (const kid of p.kids ?? []) if (typeof kid !== 'string') elements++;
    if (elements !== 1) break;
    top = p;
  }
  return top;
}

/** `top` with its siblings that score well or are link-poor paragraphs, in document order. */
function withSiblings(top: El, parent: El): El[] {
  const score = finalScore(top);
  const siblingThreshold = Math.max(10, score * 0.2);
  const chosen: El[] = [];
  for (const kid of parent.kids ?? []) {
    if (typeof kid === 'string') continue;
    if (kid === top) {
      chosen.push(kid);
      continue;
    }
    if (kid.flags & F_UNLIKELY) continue;
    let append = false;
    const bonus = kid.cls !== '' && kid.cls === top.cls ? score * 0.2 : 0;
    if ((kid.flags & F_SCORED) !== 0 && finalScore(kid) + bonus >= siblingThreshold) append = true;
    else if (kid.kind === K_P) {
      const density = linkDensity(kid);
      if (kid.textLen > 80 && density < 0.25) append = true;
      else if (kid.textLen > 0 && kid.textLen <= 80 && density === 0 && endsWithPeriod(kid)) append = true;
    }
    if (append) chosen.push(kid);
  }
  return chosen;
}

function endsWithPeriod(el: El): boolean {
  const kids = el.kids;
  if (kids === null) return false;
  for (let i = kids.length - 1; i >= 0; i--) {
    const kid = kids[i]!;
    if (typeof kid !== 'string') return false;
    const t = kid.trimEnd();
    if (t !== '') return t.endsWith('.');
  }
  return false;
}
