//! Conformance support: golden MAD vectors captured from OpenSM and saquery.
