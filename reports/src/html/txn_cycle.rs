//! A dependency cycle drawn as a small graph: the transactions as boxes on a circle (two side by side), each edge a
//! curve bowed away from the centre with an arrowhead and a label (`rw k3`), coloured by kind, so that the two edges
//! between a pair of transactions never overlap. Inline SVG, no script: the boxes link to the transactions' rows.
//!
//! The geometry is computed here rather than by a layout library: a cycle is a ring, whose layout is a circle, and
//! every crate that lays out general graphs (dot, force-directed) would add a dependency and no legibility.

use super::escape::Shown;
use faultline_workloads::txn_check::{CycleStep, EdgeKind};
use maud::{html, Markup};

/// Longer cycles are not drawn (their edges are still listed, one sentence each).
pub const DRAWN_TXNS_MAX: usize = 16;
const BOX_W: f64 = 132.0;
const BOX_H: f64 = 42.0;
const MARGIN: f64 = 34.0;
/// Edge labels are cut to this many characters (the sentence under the graph holds the whole key).
const LABEL_CHARS_MAX: usize = 18;

/// One transaction's box: its id and a second line (`p3 · n2 · ok`), linking to `href`.
pub struct TxnBox {
    /// The transaction's index (`T12`).
    pub index: u64,
    /// What the box says under the id.
    pub detail: String,
    /// Where the box links (the transaction's row).
    pub href: String,
}

/// The stroke colour of an edge kind (the same as the legend under the graph).
pub fn colour(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Ww => "#7c3aed",
        EdgeKind::Wr => "#2563eb",
        EdgeKind::Rw => "#dc2626",
        EdgeKind::Realtime => "#0f766e",
        EdgeKind::Process => "#6b7280",
    }
}

/// A point of the drawing.
#[derive(Debug, Clone, Copy, PartialEq)]
struct P {
    x: f64,
    y: f64,
}

impl P {
    fn add(self, o: P) -> P {
        P {
            x: self.x + o.x,
            y: self.y + o.y,
        }
    }
    fn sub(self, o: P) -> P {
        P {
            x: self.x - o.x,
            y: self.y - o.y,
        }
    }
    fn scale(self, k: f64) -> P {
        P {
            x: self.x * k,
            y: self.y * k,
        }
    }
    fn len(self) -> f64 {
        self.x.hypot(self.y)
    }
    fn unit(self) -> P {
        let len = self.len();
        if len < 1e-9 {
            P { x: 1.0, y: 0.0 }
        } else {
            self.scale(1.0 / len)
        }
    }
}

/// The centres of `n` boxes: two side by side, more on a circle starting at the top, clockwise; and the size of
/// the drawing.
fn layout(n: usize) -> (Vec<P>, f64, f64) {
    if n == 2 {
        let (w, h) = (BOX_W * 2.0 + 200.0 + 2.0 * MARGIN, BOX_H + 2.0 * 70.0);
        let y = h / 2.0;
        return (
            vec![
                P {
                    x: MARGIN + BOX_W / 2.0,
                    y,
                },
                P {
                    x: w - MARGIN - BOX_W / 2.0,
                    y,
                },
            ],
            w,
            h,
        );
    }
    // Far enough apart that neighbouring boxes do not touch: the chord between neighbours, 2r·sin(π/n), stays above
    // a box's width (the test checks every drawn size).
    let radius = (n as f64 * 26.0).max(110.0);
    let (w, h) = (
        2.0 * (radius + BOX_W / 2.0 + MARGIN),
        2.0 * (radius + BOX_H / 2.0 + MARGIN),
    );
    let centre = P { x: w / 2.0, y: h / 2.0 };
    let points = (0..n)
        .map(|i| {
            let a = -std::f64::consts::FRAC_PI_2 + 2.0 * std::f64::consts::PI * i as f64 / n as f64;
            centre.add(P {
                x: radius * a.cos(),
                y: radius * a.sin(),
            })
        })
        .collect();
    (points, w, h)
}

/// Where the ray from a box's centre towards `toward` leaves the box (plus a small gap).
fn border(centre: P, toward: P) -> P {
    let d = toward.sub(centre).unit();
    let (hw, hh) = (BOX_W / 2.0 + 3.0, BOX_H / 2.0 + 3.0);
    let t = (hw / d.x.abs().max(1e-9)).min(hh / d.y.abs().max(1e-9));
    centre.add(d.scale(t))
}

/// One edge's curve: start, control point and end (on the boxes' borders), and the label's anchor.
struct Curve {
    start: P,
    control: P,
    end: P,
    label: P,
}

/// The curve from box `a` to box `b`, bowed to the left of its direction (outwards for boxes laid clockwise; for
/// two boxes the two directions bow to opposite sides).
fn curve(a: P, b: P, n: usize) -> Curve {
    let d = b.sub(a);
    let left = P { x: d.y, y: -d.x }.unit();
    let bow = if n == 2 { 62.0 } else { d.len() * 0.28 };
    let control = a.add(b).scale(0.5).add(left.scale(bow));
    let (start, end) = (border(a, control), border(b, control));
    let label = start.scale(0.25).add(control.scale(0.5)).add(end.scale(0.25));
    Curve {
        start,
        control,
        end,
        label,
    }
}

/// The arrowhead at `end`, pointing away from `control`.
fn arrowhead(control: P, end: P) -> String {
    let d = end.sub(control).unit();
    let n = P { x: -d.y, y: d.x };
    let back = end.sub(d.scale(10.0));
    let (l, r) = (back.add(n.scale(5.0)), back.sub(n.scale(5.0)));
    format!("{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}", end.x, end.y, l.x, l.y, r.x, r.y)
}

fn label_text(step: &CycleStep) -> String {
    let mut text = step.kind.name().to_string();
    if let Some(key) = &step.key {
        text.push(' ');
        if key.chars().count() > LABEL_CHARS_MAX {
            text.extend(key.chars().take(LABEL_CHARS_MAX - 1));
            text.push('…');
        } else {
            text.push_str(key);
        }
    }
    text
}

/// The cycle `steps` (each from `boxes[i]` to `boxes[i + 1]`, the last back to the first) as an SVG; nothing when
/// it has fewer than two or more than [`DRAWN_TXNS_MAX`] transactions, or the boxes do not match the steps.
pub fn svg(steps: &[CycleStep], boxes: &[TxnBox], title: &str) -> Markup {
    let n = boxes.len();
    if !(2..=DRAWN_TXNS_MAX).contains(&n) || steps.len() != n {
        return html! {};
    }
    let (centres, w, h) = layout(n);
    let curves: Vec<Curve> = (0..n).map(|i| curve(centres[i], centres[(i + 1) % n], n)).collect();
    html! {
        svg class="txn-cycle" xmlns="http://www.w3.org/2000/svg" width=(format!("{w:.0}")) height=(format!("{h:.0}"))
            viewBox=(format!("0 0 {w:.0} {h:.0}")) role="img" aria-label=(Shown(title)) {
            title { (Shown(title)) }
            @for (step, c) in steps.iter().zip(&curves) {
                g class={ "edge " (step.kind.name()) } {
                    path d=(format!("M{:.1},{:.1} Q{:.1},{:.1} {:.1},{:.1}", c.start.x, c.start.y, c.control.x,
                        c.control.y, c.end.x, c.end.y))
                        stroke=(colour(step.kind)) fill="none" {}
                    polygon points=(arrowhead(c.control, c.end)) fill=(colour(step.kind)) {}
                }
            }
            @for (step, c) in steps.iter().zip(&curves) {
                @let text = label_text(step);
                @let width = 7.0 * text.chars().count() as f64 + 10.0;
                g class="edge-label" {
                    rect x=(format!("{:.1}", c.label.x - width / 2.0)) y=(format!("{:.1}", c.label.y - 9.0))
                        width=(format!("{width:.1}")) height="18" rx="4" stroke=(colour(step.kind)) {}
                    text x=(format!("{:.1}", c.label.x)) y=(format!("{:.1}", c.label.y + 4.0))
                        fill=(colour(step.kind)) { (Shown(&text)) }
                }
            }
            @for (b, p) in boxes.iter().zip(&centres) {
                a href=(Shown(&b.href)) {
                    g class="txn-box" {
                        rect x=(format!("{:.1}", p.x - BOX_W / 2.0)) y=(format!("{:.1}", p.y - BOX_H / 2.0))
                            width=(BOX_W) height=(BOX_H) rx="6" {}
                        text class="id" x=(format!("{:.1}", p.x)) y=(format!("{:.1}", p.y - 3.0)) { "T" (b.index) }
                        text class="sub" x=(format!("{:.1}", p.x)) y=(format!("{:.1}", p.y + 13.0)) {
                            (Shown(&b.detail))
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(from: u64, to: u64, kind: EdgeKind, key: Option<&str>) -> CycleStep {
        CycleStep {
            from,
            to,
            kind,
            key: key.map(str::to_string),
            sentence: String::new(),
        }
    }

    fn boxes(ids: &[u64]) -> Vec<TxnBox> {
        ids.iter()
            .map(|&index| TxnBox {
                index,
                detail: "p1 · n1 · ok".into(),
                href: format!("#row-T{index}"),
            })
            .collect()
    }

    #[test]
    fn given_two_transactions_when_laid_out_should_bow_their_two_edges_to_opposite_sides() {
        let (centres, _, _) = layout(2);
        let (there, back) = (curve(centres[0], centres[1], 2), curve(centres[1], centres[0], 2));
        assert!(
            (there.control.y - centres[0].y) * (back.control.y - centres[0].y) < 0.0,
            "one edge above the boxes, the other below"
        );
    }

    #[test]
    fn given_a_ring_when_laid_out_should_end_every_edge_outside_both_boxes() {
        for n in 3..=DRAWN_TXNS_MAX {
            let (centres, w, h) = layout(n);
            for i in 0..n {
                let (a, b) = (centres[i], centres[(i + 1) % n]);
                let c = curve(a, b, n);
                for (p, centre) in [(c.start, a), (c.end, b)] {
                    let inside = (p.x - centre.x).abs() < BOX_W / 2.0 && (p.y - centre.y).abs() < BOX_H / 2.0;
                    assert!(!inside, "n={n}: an edge end inside its box");
                }
                assert!(
                    c.label.x > 0.0 && c.label.x < w && c.label.y > 0.0 && c.label.y < h,
                    "n={n}"
                );
            }
            for (i, p) in centres.iter().enumerate() {
                for q in &centres[i + 1..] {
                    let apart = (p.x - q.x).abs() >= BOX_W || (p.y - q.y).abs() >= BOX_H;
                    assert!(apart, "n={n}: two boxes overlap");
                }
            }
        }
    }

    #[test]
    fn given_a_hostile_key_when_drawn_should_escape_and_shorten_its_label() {
        let steps = [
            step(1, 2, EdgeKind::Rw, Some("<script>alert(1)</script>")),
            step(2, 1, EdgeKind::Ww, Some("k1")),
        ];
        let drawn = svg(&steps, &boxes(&[1, 2]), "G-single").into_string();
        assert!(!drawn.contains("<script>"), "{drawn}");
        assert!(drawn.contains(">rw &lt;script&gt;alert(1)&lt;…</text>"), "{drawn}");
        assert!(drawn.contains(">ww k1</text>"), "{drawn}");
        assert!(drawn.contains("href=\"#row-T2\""), "{drawn}");
    }

    #[test]
    fn given_too_many_or_mismatched_transactions_when_drawn_should_draw_nothing() {
        let ring: Vec<CycleStep> = (0..17).map(|i| step(i, (i + 1) % 17, EdgeKind::Ww, None)).collect();
        let ids: Vec<u64> = (0..17).collect();
        assert!(svg(&ring, &boxes(&ids), "G0").into_string().is_empty());
        assert!(svg(&ring[..2], &boxes(&[1, 2, 3]), "G0").into_string().is_empty());
    }
}
