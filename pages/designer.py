"""Designer page (placeholder until its issue lands)."""

import streamlit as st

st.title("Designer")
st.info("This page is being built.")
