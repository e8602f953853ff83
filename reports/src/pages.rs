//! The frame of every page: `report.html`, `index.html` (with the campaign view), `certification.html` and
//! `matrix.html` are written with maud, so every value a page shows (plan names, reasons, paths, repro commands, log
//! lines) is escaped by construction, and they share one base stylesheet (`assets/pages.css`).

use maud::{html, Markup, PreEscaped, DOCTYPE};

/// The base stylesheet of every page.
pub const PAGES_CSS: &str = include_str!("../assets/pages.css");

/// A whole page: `title`, a `<header>` with class `header_class`, then `main`.
pub fn page(title: &str, header_class: &str, header: Markup, main: Markup) -> String {
    document(
        title,
        "",
        html! {
            header class=(header_class) { (header) }
            main { (main) }
        },
    )
}

/// A whole page around `body` (class `body_class`, for rules of one page), with the shared stylesheet.
pub fn document(title: &str, body_class: &str, body: Markup) -> String {
    styled_document(title, body_class, "", body)
}

/// [`document`] with `extra_css` (a stylesheet of this crate, such as report.html's) after the shared one.
pub fn styled_document(title: &str, body_class: &str, extra_css: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                // Both stylesheets are constants of this crate, not run data.
                style { (PreEscaped(PAGES_CSS)) (PreEscaped(extra_css)) }
            }
            body class=[(!body_class.is_empty()).then_some(body_class)] { (body) }
        }
    }
    .into_string()
}

/// A verdict pill: `class` colours it (`valid`, `invalid`, `unknown`, `not-run`), `label` says it.
pub fn pill(class: &str, label: &str) -> Markup {
    html! { span class={ "v " (class) } { (label) } }
}
